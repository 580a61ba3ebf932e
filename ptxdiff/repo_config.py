"""`[tool.ptxdiff]` in pyproject.toml, or a root ptxdiff.toml with the same keys (at its top
level, or under `[tool.ptxdiff]` too, so the keys that error messages name can be pasted as they are).

Read from the newer side of a comparison (its bytes, not the work tree), validated strictly: an
unknown or mistyped key is an error naming the file and the key, never silently ignored. The
policy that decides the gate (block, include/exclude, targets, timeout) is the base side's: a
compared change cannot switch its own gate off (`governed`).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ptxdiff.errors import ConfigError
from ptxdiff.source import nested
from ptxdiff.targets import parse_target
from ptxdiff.verdict import DEFAULT_BLOCK, DYNAMIC_BLOCK, ORDER, Verdict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class SpecConfig:
    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, Any] = field(default_factory=dict)   # TOML values, as written
    num_warps: int | None = None
    num_stages: int | None = None


@dataclass(frozen=True)
class RunConfig:
    """How to run a kernel for --outputs / --time: its host wrapper and input generator."""

    wrapper: str | None = None        # "path/to/module.py:function", called with the inputs
    inputs: str | None = None         # "path/to/module.py:make_inputs", called (n, dtype, generator)
    dtypes: tuple[str, ...] = ("float32",)
    sizes: tuple[int, ...] = ()       # problem sizes n; default: around the kernel's block sizes
    time_size: int = 1 << 20


@dataclass(frozen=True)
class KernelConfig:
    base: SpecConfig = SpecConfig()
    specs: tuple[SpecConfig, ...] = ()
    run: RunConfig = RunConfig()

    def key(self) -> str:
        """Stable text of this kernel's settings, part of the cache key."""
        def one(s: SpecConfig) -> dict[str, object]:
            return {"signature": s.signature, "constexprs": s.constexprs, "num_warps": s.num_warps,
                    "num_stages": s.num_stages}
        return json.dumps({"base": one(self.base), "specs": [one(s) for s in self.specs]}, sort_keys=True)


@dataclass(frozen=True)
class Config:
    source: str = "defaults"
    targets: tuple[int, ...] = (90,)
    targets_given: bool = False        # set by the config (else a kernel absent at sm_90 tries others)
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    block: tuple[str, ...] = DEFAULT_BLOCK
    timeout: float = 300.0
    python_path: tuple[str, ...] = ()
    kernels: dict[str, KernelConfig] = field(default_factory=dict)
    semantic: str = "off"              # "auto": output check for every constants-only verdict
    time: bool = False                 # GPU timing of changed kernels (also PTXDIFF_TIME=1)
    min_effect: float = 0.01           # timing: smallest change called faster/slower (1%), beside the A/A band
    max_specs: int = 6                 # specs compiled per kernel and target when values are guessed
    block_guessed: bool = True         # rows whose spec holds a guess block like the others
    block_unmeasured: bool = True      # a changed kernel measured on neither side blocks (the gate fails closed)
    driver_budget: float = 10.0        # seconds `git diff` waits on compiles (PTXDIFF_DRIVER_BUDGET overrides)
    remote_cache: str | None = None    # a shared cache the repository suggests (one line; only the user turns it on)

    def for_kernel(self, kernel_id: str) -> KernelConfig:
        name = kernel_id.rpartition("::")[2]
        return self.kernels.get(kernel_id) or self.kernels.get(name) or KernelConfig()

    def selects(self, path: str) -> bool:
        if self.include and not any(fnmatch.fnmatch(path, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatch(path, g) for g in self.exclude)


_SPEC_KEYS = {"signature", "constexprs", "num_warps", "num_stages"}
_RUN_KEYS = frozenset({"wrapper", "inputs", "dtypes", "sizes", "time_size"})
_Check = Callable[[Any, str, str], Any]   # (value, file, key) -> the field's value, or ConfigError


def _expect(cond: bool, where: str, key: str, what: str) -> None:
    if not cond:
        raise ConfigError(f"{where}: key {key!r} {what}")


def _str_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value), where, key,
            "must be a list of strings")
    return tuple(value)


def _spec(table: dict[str, Any], where: str, prefix: str, also: frozenset[str] = frozenset()) -> SpecConfig:
    for key in table:
        _expect(key in _SPEC_KEYS, where, prefix + key, f"is unknown (known: {', '.join(sorted(_SPEC_KEYS | also))})")
    signature = table.get("signature", {})
    _expect(isinstance(signature, dict) and all(isinstance(v, str) for v in signature.values()), where,
            prefix + "signature", 'must map parameter names to types like "*fp16" or "i32"')
    constexprs = table.get("constexprs", {})
    _expect(isinstance(constexprs, dict), where, prefix + "constexprs", "must be a table of values")
    for key in ("num_warps", "num_stages"):
        v = table.get(key)
        _expect(v is None or (isinstance(v, int) and not isinstance(v, bool) and v > 0), where, prefix + key,
                "must be a positive integer")
    return SpecConfig(dict(signature), dict(constexprs), table.get("num_warps"), table.get("num_stages"))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _checked(ok: Callable[[Any], bool], what: str, convert: Callable[[Any], Any] = lambda v: v) -> _Check:
    """A key's check that `ok` says of its value, `what` the error says when not."""
    def check(value: Any, where: str, key: str) -> Any:
        _expect(ok(value), where, key, what)
        return convert(value)
    return check


def _targets(value: Any, where: str, key: str) -> tuple[int, ...]:
    targets = _str_list(value, where, key)
    _expect(bool(targets), where, key, "must name at least one target")
    try:
        return tuple(sorted({parse_target(t) for t in targets}))   # once each, by number
    except Exception as e:
        raise ConfigError(f"{where}: key {key!r}: {e}") from None


def _block(value: Any, where: str, key: str) -> tuple[str, ...]:
    block = _str_list(value, where, key)
    bad = [b for b in block if b not in ORDER + DYNAMIC_BLOCK]
    _expect(not bad, where, key, f"names unknown verdicts {bad} (known: {', '.join(ORDER)})")
    _expect(Verdict.UNMEASURED not in block, where, key,
            "names 'unmeasured', which block_unmeasured = true|false decides (default true)")
    return tuple(Verdict(b) if b in ORDER else b for b in block)


def _kernels(value: Any, where: str, key: str) -> dict[str, KernelConfig]:
    _expect(isinstance(value, dict), where, key, "must be a table")
    kernels = {}
    for kid, ktable in value.items():
        prefix = f'kernels."{kid}".'
        _expect(isinstance(ktable, dict), where, prefix[:-1], "must be a table")
        specs_raw = ktable.get("specs", [])
        _expect(isinstance(specs_raw, list) and all(isinstance(s, dict) for s in specs_raw), where,
                prefix + "specs", "must be a list of tables")
        base = _spec({k: v for k, v in ktable.items() if k != "specs" and k not in _RUN_KEYS}, where, prefix,
                     frozenset(_RUN_KEYS | {"specs"}))
        specs = tuple(_spec(s, where, f"{prefix}specs[{i}].") for i, s in enumerate(specs_raw))
        kernels[kid] = KernelConfig(base, specs, _run({k: v for k, v in ktable.items() if k in _RUN_KEYS}, where,
                                                      prefix))
    return kernels


_BOOL = _checked(lambda v: isinstance(v, bool), "must be true or false")

# each top-level key, the check that makes its Config field (of the same name) of its value; a
# table with several wrong keys is told of the first in this order
_TOP: dict[str, _Check] = {
    "targets": _targets,
    "include": _str_list,
    "exclude": _str_list,
    "python_path": _str_list,
    "block": _block,
    "timeout": _checked(lambda v: _number(v) and v > 0, "must be a positive number of seconds", float),
    "kernels": _kernels,
    "semantic": _checked(lambda v: v in ("off", "auto", "always"), 'must be "off", "auto" or "always"'),
    "time": _BOOL,
    "max_specs": _checked(_positive_int, "must be a positive integer"),
    "block_guessed": _BOOL,
    "block_unmeasured": _BOOL,
    "min_effect": _checked(lambda v: _number(v) and 0 <= v < 1, "must be a fraction between 0 and 1 (0.01 = 1%)",
                           float),
    "driver_budget": _checked(lambda v: _number(v) and 0 <= v <= 600, "must be a number of seconds from 0 to 600",
                              float),
    "remote_cache": _checked(lambda v: isinstance(v, str) and re.fullmatch(r"[^\s\x00-\x1f\x7f]+", v) is not None,
                             'must be a URL such as "s3://bucket/ptxdiff" (a suggestion: only your git config uses it)'),
}


def parse(table: dict[str, Any], where: str) -> Config:
    """Validate a `[tool.ptxdiff]` table; `where` names the file for error messages."""
    _expect(isinstance(table, dict), where, "tool.ptxdiff", "must be a table")
    for key in table:
        _expect(key in _TOP, where, key, f"is unknown (known: {', '.join(sorted(_TOP))})")
    kw = {key: check(table[key], where, key) for key, check in _TOP.items() if key in table}
    return Config(source=where, targets_given="targets" in kw, **kw)


def _run(table: dict[str, Any], where: str, prefix: str) -> RunConfig:
    for key in ("wrapper", "inputs"):
        v = table.get(key)
        _expect(v is None or (isinstance(v, str) and ".py:" in v), where, prefix + key,
                'must look like "path/to/module.py:function"')
    dtypes = _str_list(table.get("dtypes", ["float32"]), where, prefix + "dtypes")
    sizes = table.get("sizes", [])
    _expect(isinstance(sizes, list) and all(isinstance(n, int) and n > 0 for n in sizes), where,
            prefix + "sizes", "must be a list of positive integers")
    time_size = table.get("time_size", 1 << 20)
    _expect(isinstance(time_size, int) and time_size > 0, where, prefix + "time_size", "must be a positive integer")
    return RunConfig(table.get("wrapper"), table.get("inputs"), dtypes, tuple(sizes), time_size)


def load_file(path: str) -> Config:
    """The user's own config file (`--config FILE`): pyproject spelling or top-level keys. It
    replaces the repository's, e.g. to review a repository with your own specs or targets."""
    from pathlib import Path
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror or e}") from None
    return load(lambda _: data, lambda name: name == p.name if p.name in ("pyproject.toml", "ptxdiff.toml")
                else name == "ptxdiff.toml")


def load(read: Callable[[str], bytes], exists: Callable[[str], bool]) -> Config:
    """Config of a snapshot: `read(path) -> bytes`, `exists(path) -> bool` (work tree or commit)."""
    for path, section in (("ptxdiff.toml", None), ("pyproject.toml", ("tool", "ptxdiff"))):
        if not exists(path):
            continue
        raw = read(path)
        bound = nested.bound_error(raw, "config", nested.MAX_CONFIG_BYTES)
        if bound:
            raise ConfigError(f"{path}: {bound}")
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: invalid TOML: {e}") from None
        except RecursionError:   # nesting the measure missed (nested.depth): the parser's own bound
            raise ConfigError(f"{path}: nested too deeply for a config") from None
        if section is None and set(data) == {"tool"} and isinstance(data["tool"], dict) and "ptxdiff" in data["tool"]:
            section = ("tool", "ptxdiff")  # ptxdiff.toml may use pyproject's spelling too
        table: Any = data   # any TOML value under the section: parse() says when it is no table
        if section:
            for key in section:
                table = table.get(key) if isinstance(table, dict) else None
            if table is None:
                continue
        return parse(table, f"{path} [tool.ptxdiff]" if section else path)
    return Config()


# what decides the gate: a compared change may not set these for its own review
POLICY_KEYS = ("targets", "include", "exclude", "block", "block_guessed", "block_unmeasured", "timeout", "python_path")
POLICY_NOTE = "the compared change edits ptxdiff's own policy"


def governed(base: Config, branch: Config) -> tuple[Config, str | None]:
    """The newer side's config with the base side's policy, and a line naming what the change
    edits in that policy (None when nothing). A branch cannot switch its own gate off: its
    `block = []`, `exclude`, `timeout` or `python_path` takes effect once it is on the base; a
    smaller `max_specs` too (a larger one only compiles more, and is used)."""
    changed = [k for k in POLICY_KEYS if getattr(base, k) != getattr(branch, k)]
    changed += ["max_specs"] if branch.max_specs < base.max_specs else []
    if not changed:
        return branch, None
    note = (f"{POLICY_NOTE} ({', '.join(changed)} in {branch.source}); "
            f"the base side's ({base.source}) decides this comparison, the new one once it is on the base")
    return dataclasses.replace(branch, **{k: getattr(base, k) for k in POLICY_KEYS},
                               max_specs=max(base.max_specs, branch.max_specs)), note


def unmatched_kernels(cfg: Config, kernel_ids: Iterable[str]) -> list[str]:
    """One line per `kernels."..."` entry that names no kernel (by id or function name) of the
    compared revisions, with the nearest existing id: a typo must not silently do nothing."""
    import difflib

    ids = sorted(set(kernel_ids))
    names = sorted({k.rpartition("::")[2] for k in ids})
    lines = []
    for key in cfg.kernels:
        if key in ids or key in names:
            continue
        near = difflib.get_close_matches(key, ids if "::" in key else names + ids, n=1, cutoff=0.6)
        hint = f"; did you mean {json.dumps(near[0])}?" if near else ""
        lines.append(f"{cfg.source}: kernels.{json.dumps(key)} matches no kernel{hint}")
    return lines
