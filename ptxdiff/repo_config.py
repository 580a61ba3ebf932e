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

from ptxdiff.compare.verdict import DEFAULT_BLOCK, ORDER, Verdict
from ptxdiff.errors import ConfigError
from ptxdiff.source import nested
from ptxdiff.targets import parse_target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class SpecConfig:
    signature: dict = field(default_factory=dict)
    constexprs: dict = field(default_factory=dict)
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
        def one(s: SpecConfig) -> dict:
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


_TOP_KEYS = {"targets", "include", "exclude", "block", "timeout", "python_path", "kernels", "semantic", "time",
             "min_effect", "max_specs", "block_guessed", "block_unmeasured", "driver_budget",
             "remote_cache"}
_SPEC_KEYS = {"signature", "constexprs", "num_warps", "num_stages"}
_RUN_KEYS = frozenset({"wrapper", "inputs", "dtypes", "sizes", "time_size"})


def _expect(cond: bool, where: str, key: str, what: str) -> None:
    if not cond:
        raise ConfigError(f"{where}: key {key!r} {what}")


def _str_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value), where, key,
            "must be a list of strings")
    return tuple(value)


def _spec(table: dict, where: str, prefix: str, also: frozenset = frozenset()) -> SpecConfig:
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


def parse(table: dict, where: str) -> Config:
    """Validate a `[tool.ptxdiff]` table; `where` names the file for error messages."""
    _expect(isinstance(table, dict), where, "tool.ptxdiff", "must be a table")
    for key in table:
        _expect(key in _TOP_KEYS, where, key, f"is unknown (known: {', '.join(sorted(_TOP_KEYS))})")
    kw: dict = {"source": where}
    if "targets" in table:
        targets = _str_list(table["targets"], where, "targets")
        _expect(bool(targets), where, "targets", "must name at least one target")
        try:
            kw["targets"] = tuple(sorted({parse_target(t) for t in targets}))   # once each, by number
            kw["targets_given"] = True
        except Exception as e:
            raise ConfigError(f"{where}: key 'targets': {e}") from None
    for key in ("include", "exclude", "python_path"):
        if key in table:
            kw[key] = _str_list(table[key], where, key)
    if "block" in table:
        block = _str_list(table["block"], where, "block")
        bad = [b for b in block if b not in ORDER + ("outputs-differ", "slower")]
        _expect(not bad, where, "block", f"names unknown verdicts {bad} (known: {', '.join(ORDER)})")
        _expect(Verdict.UNMEASURED not in block, where, "block",
                "names 'unmeasured', which block_unmeasured = true|false decides (default true)")
        kw["block"] = tuple(Verdict(b) if b in ORDER else b for b in block)
    if "timeout" in table:
        t = table["timeout"]
        _expect(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0, where, "timeout",
                "must be a positive number of seconds")
        kw["timeout"] = float(t)
    kernels = {}
    raw_kernels = table.get("kernels", {})
    _expect(isinstance(raw_kernels, dict), where, "kernels", "must be a table")
    for kid, ktable in raw_kernels.items():
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
    kw["kernels"] = kernels
    if "semantic" in table:
        _expect(table["semantic"] in ("off", "auto", "always"), where, "semantic", 'must be "off", "auto" or "always"')
        kw["semantic"] = table["semantic"]
    if "time" in table:
        _expect(isinstance(table["time"], bool), where, "time", "must be true or false")
        kw["time"] = table["time"]
    if "max_specs" in table:
        v = table["max_specs"]
        _expect(isinstance(v, int) and not isinstance(v, bool) and v > 0, where, "max_specs", "must be a positive integer")
        kw["max_specs"] = v
    for key in ("block_guessed", "block_unmeasured"):
        if key in table:
            _expect(isinstance(table[key], bool), where, key, "must be true or false")
            kw[key] = table[key]
    if "min_effect" in table:
        v = table["min_effect"]
        _expect(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1, where, "min_effect",
                "must be a fraction between 0 and 1 (0.01 = 1%)")
        kw["min_effect"] = float(v)
    if "driver_budget" in table:
        v = table["driver_budget"]
        _expect(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 600, where, "driver_budget",
                "must be a number of seconds from 0 to 600")
        kw["driver_budget"] = float(v)
    if "remote_cache" in table:
        v = table["remote_cache"]
        _expect(isinstance(v, str) and re.fullmatch(r"[^\s\x00-\x1f\x7f]+", v) is not None, where, "remote_cache",
                'must be a URL such as "s3://bucket/ptxdiff" (a suggestion: only your git config uses it)')
        kw["remote_cache"] = v
    return Config(**kw)


def _run(table: dict, where: str, prefix: str) -> RunConfig:
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
