"""`[tool.ptxdiff]` in pyproject.toml, or a root ptxdiff.toml with the same keys.

Read from the newer side of a comparison (its bytes, not the work tree), validated strictly: an
unknown or mistyped key is an error naming the file and the key, never silently ignored.
"""

from __future__ import annotations

import fnmatch
import json
import sys
from dataclasses import dataclass, field

from .errors import ConfigError
from .targets import parse_target

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

VERDICTS = ("failed", "added", "removed", "structural", "reordered", "constants-only", "identical")
DEFAULT_BLOCK = ("structural", "failed")


@dataclass(frozen=True)
class SpecConfig:
    signature: dict = field(default_factory=dict)
    constexprs: dict = field(default_factory=dict)
    num_warps: int | None = None
    num_stages: int | None = None


@dataclass(frozen=True)
class KernelConfig:
    base: SpecConfig = SpecConfig()
    specs: tuple[SpecConfig, ...] = ()

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
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    block: tuple[str, ...] = DEFAULT_BLOCK
    timeout: float = 300.0
    python_path: tuple[str, ...] = ()
    kernels: dict[str, KernelConfig] = field(default_factory=dict)

    def for_kernel(self, kernel_id: str) -> KernelConfig:
        name = kernel_id.rpartition("::")[2]
        return self.kernels.get(kernel_id) or self.kernels.get(name) or KernelConfig()

    def selects(self, path: str) -> bool:
        if self.include and not any(fnmatch.fnmatch(path, g) for g in self.include):
            return False
        return not any(fnmatch.fnmatch(path, g) for g in self.exclude)


_TOP_KEYS = {"targets", "include", "exclude", "block", "timeout", "python_path", "kernels"}
_SPEC_KEYS = {"signature", "constexprs", "num_warps", "num_stages"}


def _expect(cond: bool, where: str, key: str, what: str) -> None:
    if not cond:
        raise ConfigError(f"{where}: key {key!r} {what}")


def _str_list(value, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    _expect(isinstance(value, list) and all(isinstance(v, str) for v in value), where, key,
            "must be a list of strings")
    return tuple(value)


def _spec(table: dict, where: str, prefix: str) -> SpecConfig:
    for key in table:
        _expect(key in _SPEC_KEYS, where, prefix + key, f"is unknown (known: {', '.join(sorted(_SPEC_KEYS))})")
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
            kw["targets"] = tuple(parse_target(t) for t in targets)
        except Exception as e:
            raise ConfigError(f"{where}: key 'targets': {e}") from None
    for key in ("include", "exclude", "python_path"):
        if key in table:
            kw[key] = _str_list(table[key], where, key)
    if "block" in table:
        block = _str_list(table["block"], where, "block")
        bad = [b for b in block if b not in VERDICTS + ("outputs-differ", "slower")]
        _expect(not bad, where, "block", f"names unknown verdicts {bad} (known: {', '.join(VERDICTS)})")
        kw["block"] = block
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
        base = _spec({k: v for k, v in ktable.items() if k != "specs"}, where, prefix)
        specs = tuple(_spec(s, where, f"{prefix}specs[{i}].") for i, s in enumerate(specs_raw))
        kernels[kid] = KernelConfig(base, specs)
    kw["kernels"] = kernels
    return Config(**kw)


def load(read, exists) -> Config:
    """Config of a snapshot: `read(path) -> bytes`, `exists(path) -> bool` (work tree or commit)."""
    for path, section in (("ptxdiff.toml", None), ("pyproject.toml", ("tool", "ptxdiff"))):
        if not exists(path):
            continue
        try:
            data = tomllib.loads(read(path).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: invalid TOML: {e}") from None
        if section:
            for key in section:
                data = data.get(key) if isinstance(data, dict) else None
            if data is None:
                continue
        return parse(data, f"{path} [tool.ptxdiff]" if section else path)
    return Config()
