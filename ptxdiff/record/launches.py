"""The recorded-launch file, `.ptxdiff/launches.jsonl`: read, checked, written, matched.

One JSON object per line, one line per distinct specialisation that really launched (written by
`ptxdiff record`, from a command's launches or from tritonparse traces). Pure: no triton import,
so spec resolution can read it on the cached path. The file is committed and reviewed, so its
text is canonical: keys in a fixed order, lines sorted by kernel id, then most frequent first,
then the spec's own text; recording the same launches twice gives the same bytes, and kernels
recorded on two branches touch different lines.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ptxdiff.errors import ConfigError
from ptxdiff.record import replay_format
from ptxdiff.record.replay_format import Replay
from ptxdiff.source import nested

DEFAULT_PATH = ".ptxdiff/launches.jsonl"
DEFAULT_KEEP = 8
FIELDS = ("kernel", "params", "signature", "constexprs", "divisible_by_16", "num_warps", "num_stages", "options",
          "autotune", "via", "count")
OPTIONAL = ("replay",)   # later than the first format: a line without it still reads
AUTOTUNE = (None, "ran", "all")
_CONFLICT = ("<<<<<<<", "=======", ">>>>>>>", "|||||||")
_PATH = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[\d+\])+)?$")


@dataclass(frozen=True)
class Launch:
    """One distinct specialisation of one kernel, as triton built it for a real launch.

    `signature` maps each parameter passed at run time to its type (`*fp16`, `i32`, `fp32`, `u1`,
    a list of types for a tuple parameter); `constexprs` maps every other parameter to its value,
    the declared `tl.constexpr` ones and those triton made constant (an int equal to 1, None).
    `divisible` names the parameters triton marked `tt.divisibility = 16` (pointers whose
    address, ints whose value is a multiple of 16). Tuple elements are named `t[0]`.
    `autotune`: None for a plain launch, "ran" for the Config the autotuner picked and launched,
    "all" for one of every Config (the interpreter has no timing to pick by)."""

    kernel: str
    params: tuple[str, ...]
    signature: dict[str, Any]      # JSON as the file has it (checked by from_json)
    constexprs: dict[str, Any]
    divisible: tuple[str, ...]
    num_warps: int
    num_stages: int
    options: dict[str, Any]
    autotune: str | None
    via: str
    count: int
    # representative launches of this spec (replay_format.py), for --outputs/--time without a wrapper;
    # not part of the spec: a new recording of the same specs changes no kernel
    replay: tuple[Replay, ...] = field(default=(), compare=False)

    def as_json(self) -> dict[str, object]:
        out = self.spec_json()
        out["count"] = self.count
        if self.replay:
            out["replay"] = [r.as_json() for r in self.replay]
        return out

    def spec_json(self) -> dict[str, object]:
        return {"kernel": self.kernel, "params": list(self.params), "signature": dict(self.signature),
                "constexprs": dict(self.constexprs), "divisible_by_16": list(self.divisible),
                "num_warps": self.num_warps, "num_stages": self.num_stages,
                "options": {k: self.options[k] for k in sorted(self.options)}, "autotune": self.autotune,
                "via": self.via}

    @property
    def spec_text(self) -> str:
        """Everything but the count and the replays: the identity of the spec, and its sort key
        after the count."""
        return _dumps(self.spec_json())

    def line(self) -> str:
        return _dumps(self.as_json())


def _dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=True, allow_nan=False)


def _fail(where: str, what: str) -> NoReturn:
    raise ConfigError(f"{where}: {what}")


def _int(obj: dict[str, object], key: str, where: str, least: int) -> int:
    v = obj[key]
    if not isinstance(v, int) or isinstance(v, bool) or v < least:
        _fail(where, f"{key!r} must be an integer >= {least}")
    return v


def _types_ok(t: object) -> bool:
    if isinstance(t, str):
        return bool(t) and t != "constexpr"
    return isinstance(t, list) and all(x == "constexpr" or _types_ok(x) for x in t)


def _leaf(signature: dict[str, object], name: str) -> object:
    """The type a parameter name or tuple path `t[0][1]` points at (None if it points nowhere)."""
    m = _PATH.match(name)
    if not m or m.group(1) not in signature:
        return None
    t = signature[m.group(1)]
    for index in re.findall(r"\[(\d+)\]", m.group(2) or ""):
        if not isinstance(t, list) or int(index) >= len(t):
            return None
        t = t[int(index)]
    return t


def from_json(obj: object, where: str) -> Launch:
    """One line's object -> Launch; anything malformed is a ConfigError naming `where`."""
    if not isinstance(obj, dict):
        _fail(where, "not a JSON object")
    for key in FIELDS:
        if key not in obj:
            _fail(where, f"missing key {key!r}")
    unknown = sorted(set(obj) - set(FIELDS) - set(OPTIONAL))
    if unknown:
        _fail(where, f"unknown key {unknown[0]!r} (known: {', '.join(FIELDS)})")
    kernel = obj["kernel"]
    if not isinstance(kernel, str) or not re.fullmatch(r"[^:]+::[A-Za-z_][A-Za-z0-9_]*", kernel):
        _fail(where, "'kernel' must be an id like \"ops/gelu.py::gelu_kernel\"")
    params = obj["params"]
    if not isinstance(params, list) or not all(isinstance(p, str) and _PATH.match(p) for p in params) \
            or len(set(params)) != len(params):
        _fail(where, "'params' must list the kernel's parameter names, each once")
    signature, constexprs = obj["signature"], obj["constexprs"]
    if not isinstance(signature, dict) or not all(k in params and _types_ok(t) for k, t in signature.items()):
        _fail(where, "'signature' must map parameters to types like \"*fp16\" or \"i32\"")
    if not isinstance(constexprs, dict):
        _fail(where, "'constexprs' must be an object")
    for name in constexprs:
        if name not in params and _leaf(signature, name) != "constexpr":
            _fail(where, f"'constexprs' names {name!r}, which is neither a parameter nor a constant tuple element")
    for p in params:
        if (p in signature) == (p in constexprs):
            _fail(where, f"parameter {p!r} must be in exactly one of 'signature' and 'constexprs'")
    divisible = obj["divisible_by_16"]
    if not isinstance(divisible, list) or len(set(map(str, divisible))) != len(divisible):
        _fail(where, "'divisible_by_16' must list parameter names, each once")
    for name in divisible:
        t = _leaf(signature, name) if isinstance(name, str) else None
        if not isinstance(t, str) or t == "constexpr":
            _fail(where, f"'divisible_by_16' names {name!r}, which is not a run-time parameter")
    num_warps = _int(obj, "num_warps", where, 1)
    num_stages = _int(obj, "num_stages", where, 0)
    if not isinstance(obj["options"], dict):
        _fail(where, "'options' must be an object")
    if obj["autotune"] not in AUTOTUNE:
        _fail(where, "'autotune' must be null, \"ran\" or \"all\"")
    if not isinstance(obj["via"], str) or not obj["via"]:
        _fail(where, "'via' must say where the launch was seen (cuda, interpreter, tritonparse)")
    count = _int(obj, "count", where, 1)
    replays = obj.get("replay", [])
    if not isinstance(replays, list):
        _fail(where, "'replay' must be a list of launches")
    replay = tuple(replay_format.from_json(r, where) for r in replays)
    for r in replay:
        stray = [name for name, _ in r.args if name not in signature]
        if stray:
            _fail(where, f"'replay' names {stray[0]!r}, which is not a run-time parameter")
    def in_order(name: str) -> tuple[int, str]:  # canonical order: the parameters', tuple elements after their tuple
        match = _PATH.match(name)
        assert match is not None, name   # names were checked against _PATH when read
        return order[match.group(1)], name

    order = {p: i for i, p in enumerate(params)}
    return Launch(kernel, tuple(params), {p: signature[p] for p in params if p in signature},
                  {k: constexprs[k] for k in sorted(constexprs, key=in_order)}, tuple(sorted(divisible, key=in_order)),
                  num_warps, num_stages, dict(obj["options"]), obj["autotune"], obj["via"], count, replay)


def parse(text: str, where: str) -> dict[str, tuple[Launch, ...]]:
    """The file's text -> {kernel id: launches, most frequent first}. A bad line is a one-line
    ConfigError naming `where:line`."""
    out: dict[str, list[Launch]] = {}
    seen: dict[tuple[str, str], int] = {}
    first: dict[str, int] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        at = f"{where}:{n}"
        if not line:
            continue
        if line.startswith(_CONFLICT):
            _fail(at, "git merge conflict marker; keep one side's lines (or delete the file) and record again")
        bound = nested.bound_error(line, "recorded launch", nested.MAX_RECORDING_BYTES)
        if bound:
            _fail(at, bound)
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            _fail(at, f"not JSON ({e.msg} at column {e.colno})")
        except RecursionError:   # nesting the measure missed (nested.depth): the parser's own bound
            _fail(at, "nested too deeply for a recorded launch")
        launch = from_json(obj, at)
        key = (launch.kernel, launch.spec_text)
        if key in seen:
            _fail(at, f"the same spec as line {seen[key]}; merge them (counts add up)")
        seen[key] = n
        if launch.kernel in first and out[launch.kernel][0].params != launch.params:
            _fail(at, f"{launch.kernel} has params {list(launch.params)} here but "
                      f"{list(out[launch.kernel][0].params)} on line {first[launch.kernel]}")
        first.setdefault(launch.kernel, n)
        out.setdefault(launch.kernel, []).append(launch)
    return {k: tuple(sorted(v, key=_order)) for k, v in sorted(out.items())}


def _order(launch: Launch) -> tuple[int, str]:
    return (-launch.count, launch.spec_text)


def load(read: Callable[[str], bytes], exists: Callable[[str], bool], path: str = DEFAULT_PATH) -> dict[str, tuple[Launch, ...]]:
    """The recorded launches of a snapshot: `read(path) -> bytes`, `exists(path) -> bool`, like
    config.load. No file is no recording (an empty dict)."""
    if not exists(path):
        return {}
    raw = read(path)
    if len(raw) > nested.MAX_RECORDING_BYTES:
        raise ConfigError(f"{path}: {nested.bound_error(raw, 'recording', nested.MAX_RECORDING_BYTES)}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse(text, path)


def combine(launches: Iterable[Launch], keep: int = DEFAULT_KEEP,
            keep_launches: int = replay_format.DEFAULT_KEEP_LAUNCHES) -> dict[str, tuple[Launch, ...]]:
    """Launches of one recording (from several processes) -> one entry per distinct spec with the
    counts added up, the `keep` most frequent per kernel, each with its `keep_launches`
    representative launches (replay_format.select)."""
    total: dict[tuple[str, str], Launch] = {}
    shapes: dict[tuple[str, str], list[Replay]] = {}
    for launch in launches:
        key = (launch.kernel, launch.spec_text)
        before = total.get(key)
        total[key] = launch if before is None else _with_count(before, before.count + launch.count)
        shapes.setdefault(key, []).extend(launch.replay)
    total = {k: dataclasses.replace(v, replay=replay_format.select(shapes[k], keep_launches)) for k, v in total.items()}
    out: dict[str, list[Launch]] = {}
    for launch in total.values():
        out.setdefault(launch.kernel, []).append(launch)
    return {k: tuple(sorted(v, key=_order)[:keep]) for k, v in sorted(out.items())}


def _with_count(launch: Launch, count: int) -> Launch:
    fields = {f: getattr(launch, f) for f in Launch.__dataclass_fields__}
    fields["count"] = count
    return Launch(**fields)


def replace(old: dict[str, tuple[Launch, ...]], new: dict[str, tuple[Launch, ...]]) -> dict[str, tuple[Launch, ...]]:
    """A new recording replaces the entries of the kernels it saw and keeps the others."""
    merged = {k: v for k, v in old.items() if k not in new}
    merged.update(new)
    return dict(sorted(merged.items()))


def dumps(launches: dict[str, tuple[Launch, ...]]) -> str:
    """The canonical file text."""
    return "".join(launch.line() + "\n" for kernel in sorted(launches)
                   for launch in sorted(launches[kernel], key=_order))


def match(launches: dict[str, tuple[Launch, ...]], kernel_id: str,
          params: Iterable[str]) -> tuple[tuple[Launch, ...], str | None]:
    """The recorded launches that apply to this kernel, found by id; when the kernel's parameter
    names are not the recorded ones (an older or newer revision), none, and a message saying
    which names differ. Nothing recorded is no launches and no message."""
    entries = launches.get(kernel_id, ())
    if not entries:
        return (), None
    recorded, here = entries[0].params, tuple(params)
    if recorded == here:
        return entries, None
    parts = []
    moved = [(a, b) for a, b in zip(recorded, here) if a != b]
    if len(recorded) == len(here) and all(a not in here and b not in recorded for a, b in moved):
        parts.append("renamed " + ", ".join(f"{a} -> {b}" for a, b in moved))
    else:
        gone = [p for p in recorded if p not in here]
        added = [p for p in here if p not in recorded]
        if gone:
            parts.append("recorded, not here: " + ", ".join(gone))
        if added:
            parts.append("here, not recorded: " + ", ".join(added))
        if not parts:
            parts.append("same names in another order (recorded: " + ", ".join(recorded) + ")")
    return (), (f"recorded launches of {kernel_id} are for other parameters ({'; '.join(parts)}); "
                "not used here")


@dataclass(frozen=True)
class Recording:
    """What one recording saw, before it is combined and merged into the file."""

    launches: tuple[Launch, ...]   # repository kernels; the same spec may come once per process
    ignored: dict[str, int]                 # kernel outside the repository -> launches
    notes: tuple[str, ...] = ()             # what could not be read, said once each
    via: str = ""
