"""What a kernel is launched with, from outside its body: part of the kernel, like its source.

The values a kernel is compiled with come from its launch sites (`BLOCK_SIZE=1024` at a call,
a module constant read there, `num_warps=`), from `.ptxdiff/launches.jsonl` (`ptxdiff record`)
and from the config's entry for the kernel. A change in any of them changes the compiled kernel
as surely as an edit of its body, so two revisions of a kernel differ when their fingerprints
or their launch inputs differ, and the row says what changed in the launch.

What only adds knowledge is no change: a recording or a config entry that the older revision
does not have yet describes the older revision too (`inherit`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ptxdiff import repo_config
from ptxdiff.discovery import caps
from ptxdiff.discovery.callsites import FactKind
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.errors import ConfigError
from ptxdiff.record import launches as recorded
from ptxdiff.record.launches import DEFAULT_PATH, Launch, match
from ptxdiff.repo_config import Config, KernelConfig
from ptxdiff.source.modules import Files

# the files besides the source that launch inputs come from
FILES = (DEFAULT_PATH, "ptxdiff.toml", "pyproject.toml")

_NO_ENTRY = KernelConfig().key()


@dataclass(frozen=True)
class LaunchInputs:
    """One side's launch inputs of one kernel; equal inputs compile to the same specs."""

    call_site: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()  # param -> ((kind, value), ...)
    recorded: tuple[Launch, ...] = ()
    config: str = ""                          # the config entry's stable text ("" when none)
    alike: tuple[tuple[str, ...], ...] = ()   # constexprs every site passes one expression (Kernel.alike)
    recorded_note: str | None = field(default=None, compare=False)  # a recording that does not fit
    # where each came from, for the row's words; not part of what is compared
    # param -> the "path:line" of the launch site of each of its values
    sites: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    config_source: str = field(default="", compare=False)


def inputs_of(kernel: Kernel, recorded: dict[str, tuple[Launch, ...]], cfg: Config) -> LaunchInputs:
    """The launch inputs of a kernel on one side: its call-site facts, its recorded launches
    (those that fit its parameters) and its config entry."""
    launches, note = match(recorded, kernel.id, [p.name for p in kernel.params]) if recorded else ((), None)
    entry = cfg.for_kernel(kernel.id).key()
    config = entry if entry != _NO_ENTRY else ""
    call_site = tuple((name, tuple((f.kind, f.value) for f in facts)) for name, facts in kernel.launch)
    sites = {name: tuple(f.site for f in facts) for name, facts in kernel.launch}
    return LaunchInputs(call_site, tuple(launches), config, kernel.alike, note, sites, cfg.source if config else "")


def inherit(old: LaunchInputs, new: LaunchInputs) -> LaunchInputs:
    """The older side's inputs, where what it lacks is knowledge the newer side adds: a first
    recording, a first config entry describe the older revision as well."""
    if old.recorded:
        recorded, note = old.recorded, old.recorded_note
    else:
        recorded, note = new.recorded, new.recorded_note
    return LaunchInputs(old.call_site, recorded, old.config or new.config, old.alike, note, old.sites,
                        old.config_source or new.config_source)


def _values(facts: tuple[tuple[str, object], ...]) -> str:
    # a value as passed; a runtime type as `<i32>` (the site passes an expression of that type); a
    # computed size as the range its caps give (`<..4096>`)
    shown = ["None" if kind == FactKind.NONE else f"<{value}>" if kind == FactKind.TYPE else
             (f"<{caps.shown(value)}>" if isinstance(value, tuple) else "<expr>") if kind == FactKind.EXPR else
             str(value) for kind, value in facts]
    return "|".join(shown) if shown else "unset"


def changes(old: LaunchInputs, new: LaunchInputs) -> list[str]:
    """What changed between two sides' launch inputs, one phrase each:
    `BLOCK_SIZE 1024 -> 2048 (call site ops/vadd.py:21)`."""
    out = []
    before, after = dict(old.call_site), dict(new.call_site)
    for name in dict.fromkeys([*before, *after]):
        if before.get(name) != after.get(name):
            where = ", ".join(_changed_sites(name, old, new)) or "a call site"
            out.append(f"{name} {_values(before.get(name, ()))} -> {_values(after.get(name, ()))} (call site {where})")
    if old.alike != new.alike:
        out.append(f"passed one value {_groups(old.alike)} -> {_groups(new.alike)} (call site)")
    if old.recorded != new.recorded:
        out.append(f"recorded launches {len(old.recorded)} -> {len(new.recorded)} specs ({DEFAULT_PATH})")
    if old.config != new.config:
        where = f"(config {new.config_source or old.config_source})"
        was, now = _entry(old.config), _entry(new.config)
        out += [f"{key} {was.get(key, 'unset')} -> {now.get(key, 'unset')} {where}"
                for key in dict.fromkeys([*was, *now]) if was.get(key) != now.get(key)]
    return out


def _groups(alike: tuple[tuple[str, ...], ...]) -> str:
    return "; ".join("=".join(group) for group in alike) or "none"


def _entry(text: str) -> dict[str, object]:
    """A config entry's values by name (`BLOCK_SIZE`, `num_warps`, `signature.x_ptr`, `specs`)."""
    if not text:
        return {}
    data = json.loads(text)
    base = data.get("base") or {}
    out: dict[str, object] = dict(base.get("constexprs") or {})
    out.update({f"signature.{k}": v for k, v in (base.get("signature") or {}).items()})
    out.update({k: base[k] for k in ("num_warps", "num_stages") if base.get(k) is not None})
    if data.get("specs"):
        out["specs"] = json.dumps(data["specs"], sort_keys=True)
    return out


def _changed_sites(name: str, old: LaunchInputs, new: LaunchInputs) -> list[str]:
    """The launch sites of the values of `name` that one side has and the other has not (where
    a value is passed from several sites, the site that changed)."""
    out = []
    for side, other in ((new, old), (old, new)):
        theirs = set(dict(other.call_site).get(name, ()))
        for fact, site in zip(dict(side.call_site).get(name, ()), side.sites.get(name, ())):
            if fact not in theirs and site and site not in out:
                out.append(site)
    return out


def paths_of(old: LaunchInputs, new: LaunchInputs) -> set[str]:
    """The files whose change made the launch change: the call sites', the recording, the repo_config."""
    out = set()
    before, after = dict(old.call_site), dict(new.call_site)
    for name in set(before) | set(after):
        if before.get(name) != after.get(name):
            out |= {s.rpartition(":")[0] for s in _changed_sites(name, old, new)}
    if old.recorded != new.recorded:
        out.add(DEFAULT_PATH)
    if old.config != new.config:
        out |= {s.partition(" [")[0] for s in (old.config_source, new.config_source) if s and s != "defaults"}
    return out


def side_config(snap: Files | None, fallback: Config) -> Config:
    """A revision's own config, for its kernel entries; `fallback` where it has none or it cannot
    be read (a config added later describes older revisions too)."""
    if snap is None:
        return fallback
    try:
        cfg = repo_config.load(snap.read, snap.__contains__)
    except ConfigError:
        return fallback
    return fallback if cfg.source == "defaults" else cfg


def side_launches(snap: Files | None) -> dict[str, tuple[Launch, ...]]:
    """A revision's recorded launches; none where its file cannot be read (the other side's
    then describe it, as a first recording does)."""
    if snap is None:
        return {}
    try:
        return recorded.load(snap.read, snap.__contains__)
    except ConfigError:
        return {}
