"""Which kernels and specs are compared with which: the kernels a pathspec selects, old and new
kernels paired by id (and rename), each pair with its sides' launch inputs and config entries,
and, within a pair, which old spec a new spec is compared with where their keys differ.

Specs of the same values have the same key and pair by it. What is left pairs only with an equal
spec (`equal`): the same types, the same `None`-ness and the same constexpr values for every
parameter both sides have (the same warps, stages and Config options first), so an autotune
Config pairs with the same Config wherever the list puts it, never with its neighbour, and an old
`A=None` never stands against a new `B=None`. Where the launch changed (a call site, a
recording or a config entry, said on the row) values that are facts may differ too, and so may
they where one spec is left on each side (a constexpr default moved, the one Config retuned),
never two by position. A spec with no equal partner is unpaired: shown, never compared (rows.py).
"""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass
from typing import Any

from ptxdiff import repo_config
from ptxdiff.compare import gate_inputs
from ptxdiff.compare.gate_inputs import Role
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel, renamed_id
from ptxdiff.git.repo import Snapshot
from ptxdiff.record import launches as recorded
from ptxdiff.repo_config import KernelConfig
from ptxdiff.specs import launch
from ptxdiff.specs.guesses import GuessKind
from ptxdiff.specs.launch import LaunchInputs


def _guessed(result: SpecResult | None) -> dict[str, str]:
    """A spec result's guessed constexpr values, as text (a type or a heuristic's input is no constexpr)."""
    spec = result.spec if result else None
    if spec is None:
        return {}
    values = spec.constexprs
    return {g.name: repr(values[g.name]) for g in spec.guessed if g.kind is GuessKind.VALUE and g.name in values}


def _typed(result: SpecResult | None) -> set[str]:
    """The params whose type a spec result guessed."""
    spec = result.spec if result else None
    return {g.name for g in spec.guessed if g.kind is GuessKind.TYPE} if spec else set()


def agree(old: SpecResult | None, new: SpecResult | None) -> bool:
    """Whether two spec results take the same value for every parameter both guess."""
    a, b = _guessed(old), _guessed(new)
    return all(a[k] == b[k] for k in a.keys() & b.keys())


def _facts(result: SpecResult | None) -> tuple[dict[str, Any], dict[str, Any], tuple[Any, ...]]:
    """A spec result's signature (types, `constexpr` for a constexpr or a `None`), constexpr
    values as text, and warps, stages and the Config's other options."""
    spec = result.spec if result else None
    if spec is None:
        return {}, {}, ()
    values = {k: repr(v) for k, v in spec.constexprs.items()}
    return dict(spec.signature), values, tuple(sorted((k, repr(v)) for k, v in spec.compile_options))


def _computed(*results: SpecResult | None) -> set[str]:
    """The constexprs a heuristic computed on either side: what the launch's inputs decide."""
    return {name for r in results if r and r.spec for name in r.spec.heuristics}


def equal(old: SpecResult | None, new: SpecResult | None, launched: bool = False, options: bool = False) -> bool:
    """Whether two specs are the same spec: for every parameter both have, the same type and
    `None`-ness and the same value (a heuristic's output aside: the same inputs decide it); with
    `options`, the same warps, stages and Config options
    too. A parameter the kernel now declares otherwise (a runtime `fp32` made a constexpr) is
    the kernel's change, not another spec: the row's reason names it. With `launched` (the
    pair's launch changed: a call site, a recording, a config entry) values and types that are
    facts on both sides (not guessed) may differ: the launch says how."""
    if not agree(old, new):
        return False
    (sa, va, ra), (sb, vb, rb) = _facts(old), _facts(new)
    for name in _computed(old, new):   # the same inputs on both sides: what a heuristic makes of them may move
        va.pop(name, None)
        vb.pop(name, None)
    if options and ra != rb:
        return False
    typed = _typed(old) | _typed(new)
    for k in sa.keys() & sb.keys():
        if sa[k] == sb[k]:
            continue
        if va.get(k) == "None" or vb.get(k) == "None":
            return False   # `None` on one side only: another spec, never the same one
        if "constexpr" not in (sa[k], sb[k]) and (not launched or k in typed):
            return False   # two runtime types: a guess against a guess, or facts of one launch
        # else the kernel declares it otherwise (runtime -> constexpr): its signature changed, the row says how
    both = va.keys() & vb.keys()
    if launched:   # guessed values agree (`agree`); a fact may move, never to or from `None`
        return all((va[k] == "None") == (vb[k] == "None") for k in both)
    return all(va[k] == vb[k] for k in both)


def pair_lone(by_key: dict[object, list[Any]], launched: bool = False) -> None:
    """Pair, in `by_key` (key -> [old result, new result]), specs that only one side has: each
    new one with the first old one left that is equal to it (`equal`); then what is still
    alone with an equal spec already paired (a side with a flag fewer compiles the projections
    of the other side's specs: one of its specs stands for several). What finds none stays
    alone: unpaired."""
    lone_old = [k for k, (a, b) in by_key.items() if b is None]
    lone_new = [k for k, (a, b) in by_key.items() if a is None]
    olds = [by_key[k][0] for k in lone_old]
    news = [by_key[k][1] for k in lone_new]
    for options in (True, False):   # the same Config first, then one retuned (its warps, stages, maxnreg)
        for kn in [k for k in lone_new if by_key[k][0] is None]:
            ko = next((k for k in lone_old if equal(by_key[k][0], by_key[kn][1], launched, options)), None)
            if ko is not None:
                lone_old.remove(ko)
                by_key[kn][0] = by_key.pop(ko)[0]
    # a fact the source moved (a constexpr default, the one Config retuned): paired only one to
    # one, the one spec left on each side; two or more left are never paired by position
    left = [k for k in lone_new if by_key[k][0] is None]
    if len(left) == 1 and len(lone_old) == 1 and equal(by_key[lone_old[0]][0], by_key[left[0]][1], launched=True):
        by_key[left[0]][0] = by_key.pop(lone_old.pop())[0]
    for kn in [k for k in lone_new if by_key[k][0] is None]:
        by_key[kn][0] = next((a for a in olds if equal(a, by_key[kn][1], launched)), None)
    for ko in lone_old:
        by_key[ko][1] = next((b for b in news if equal(by_key[ko][0], b, launched)), None)


def path_matches(path: str, specs: list[str] | None) -> bool:
    """Whether a path is one the pathspecs name (a folder, the path itself, a glob; none: all)."""
    if not specs:
        return True
    for spec in specs:
        spec = spec.rstrip("/")
        if spec in ("", ".") or path == spec or path.startswith(spec + "/") or fnmatch.fnmatch(path, spec):
            return True
    return False


def select(found: Discovery, cfg: repo_config.Config, pathspecs: list[str] | None,
           back: dict[str, str]) -> Discovery:
    """Kernels in selected files whose effective source reads a file the pathspecs match.

    `back` maps this side's paths to the other side's names (renames), so both sides are
    filtered by the same, newer names.
    """
    def name(p: str) -> str:
        return back.get(p, p)
    # the recording and the config hold launch values of any kernel: naming one selects all
    every = {p for p in launch.FILES if path_matches(p, pathspecs)}
    kernels = {kid: k for kid, k in found.kernels.items() if cfg.selects(name(k.path))
               and any(path_matches(name(p), pathspecs) for p in k.paths | {k.path} | every)}
    broken = {p: b for p, b in found.broken.items() if cfg.selects(name(p)) and path_matches(name(p), pathspecs)}
    return Discovery(kernels, broken)


def pair_kernels(old_found: Discovery, new_found: Discovery, renames: dict[str, str]) \
        -> tuple[list[tuple[Kernel | None, Kernel | None]], list[tuple[Broken | None, Broken | None]]]:
    """Old and new kernels paired by id (through `renames`, new path -> old path), then the old
    ones left (removed, unless their file is broken on the new side); and the broken files of
    either side, with the other side's where it is broken too."""
    pairs: list[tuple[Kernel | None, Kernel | None]] = []
    matched: set[str] = set()
    for kid, kernel in new_found.kernels.items():
        old_id = renamed_id(kid, renames)
        o = old_found.kernels.get(old_id) or old_found.kernels.get(kid)
        if o is not None:
            matched.add(o.id)
        pairs.append((o, kernel))
    # a kernel whose `def` is still there under another binding (`@triton.jit def k` -> `k =
    # triton.jit(_k)`, into a class, or no longer resolved): the same function, never `removed`
    lone = [k for k in old_found.kernels.values() if k.id not in matched and k.id not in new_found.kernels]
    for i, (o, n) in enumerate(pairs):
        assert n is not None
        same = [k for k in lone if o is None and k.id not in matched and _def_of(k, {}) == _def_of(n, renames)]
        if len(same) == 1:
            matched.add(same[0].id)
            pairs[i] = (same[0], n)
    broken_paths = set(new_found.broken) | {renames.get(p, p) for p in new_found.broken}
    for kid, kernel in old_found.kernels.items():
        if kid not in matched and kernel.path not in broken_paths and \
                not any(renames.get(np) == kernel.path for np in new_found.broken):
            pairs.append((kernel, None))
    broken_rows: list[tuple[Broken | None, Broken | None]] = [
        (old_found.broken.get(renames.get(p, p)), b) for p, b in new_found.broken.items()]
    back = {v: k for k, v in renames.items()}
    broken_rows += [(b, None) for p, b in old_found.broken.items() if back.get(p, p) not in new_found.broken]
    return pairs, broken_rows


def _def_of(kernel: Kernel, renames: dict[str, str]) -> tuple[str, str]:
    """(path on the old side, name of the `def` triton compiles) of a kernel."""
    return renames.get(kernel.path, kernel.path), kernel.function or kernel.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Pair:
    """A compared kernel pair with each side's launch inputs and config entry."""

    old: Kernel | None
    new: Kernel | None
    old_inputs: LaunchInputs | None
    new_inputs: LaunchInputs | None
    old_config: KernelConfig | None
    new_config: KernelConfig | None
    retooled: bool = False   # the sides compile with different tritons: never unchanged
    role: Role = Role.GATE         # what its rows decide (compare/gate_inputs.py): the gate, or the report only
    said: tuple[str, ...] = ()     # Role.PIN: pins that contradict the branch's launch sites

    @property
    def kernel_id(self) -> str:
        kernel = self.new or self.old
        assert kernel is not None  # a pair has at least one side
        return kernel.id

    @property
    def unchanged(self) -> bool:
        """Both sides there, the same effective source, launched the same way."""
        return self.old is not None and self.new is not None and self.old.fingerprint == self.new.fingerprint \
            and self.old_inputs == self.new_inputs and not self.retooled and not self.said

    def launch_changes(self) -> list[str]:
        if self.old_inputs is None or self.new_inputs is None:
            return []
        return launch.changes(self.old_inputs, self.new_inputs)

    def launch_paths(self) -> set[str]:
        if self.old_inputs is None or self.new_inputs is None:
            return set()
        return launch.paths_of(self.old_inputs, self.new_inputs)


def launched(kernel_pairs: list[tuple[Kernel | None, Kernel | None]], new_snap: Snapshot, old_snap: Snapshot | None,
              cfg: repo_config.Config, old_cfg: repo_config.Config, base: repo_config.Config | None = None) -> list[Pair]:
    """Each pair with the launch inputs and config entry of each side (`cfg`, `old_cfg`: the
    configs whose kernel entries describe the newer and the older side). With `base` (the base
    side's config, for a repository's own config) the gate compiles what the base says, the
    branch's own entries and recordings only the report (`gated`)."""
    new_launches = recorded.load(new_snap.read, new_snap.__contains__)
    old_launches = launch.side_launches(old_snap)
    out = []
    for o, n in kernel_pairs:
        n_in = launch.inputs_of(n, new_launches, cfg) if n else None
        o_in = launch.inputs_of(o, old_launches, old_cfg) if o else None
        o_cfg = old_cfg.for_kernel(o.id) if o else None
        if o_in is not None and n_in is not None and o is not None and n is not None:
            if not o_in.config:  # no entry of its own: the newer side's describes it
                o_cfg = cfg.for_kernel(n.id)
            o_in = launch.inherit(o_in, n_in)
        pair = Pair(o, n, o_in, n_in, o_cfg, cfg.for_kernel(n.id) if n else None)
        out += gated(pair, base, old_launches, cfg.source) if base is not None and o and n else [pair]
    return out


def gated(pair: Pair, base: repo_config.Config, base_launches: dict[str, Any], source: str) -> list[Pair]:
    """A pair as the gate compiles it (both sides with the base's entries and recordings), the
    branch's own (for the report, where it differs), the launch sites' values where the gate's
    pins replace them, and the branch's pins that contradict its launch sites (they block)."""
    o, n = pair.old, pair.new
    assert o is not None and n is not None and pair.old_inputs is not None and pair.new_inputs is not None
    o_in, n_in = launch.inputs_of(o, base_launches, base), launch.inputs_of(n, base_launches, base)
    o_cfg, n_cfg = base.for_kernel(o.id), base.for_kernel(n.id)
    out = [Pair(o, n, o_in, n_in, o_cfg, n_cfg)]
    if (pair.old_inputs, pair.new_inputs, pair.old_config, pair.new_config) != (o_in, n_in, o_cfg, n_cfg):
        out.append(dataclasses.replace(pair, role=Role.REPORT))
    stale = {c.name for c in gate_inputs.contradictions(n, n_cfg, n_in.recorded, base.source)}
    if stale:
        o_un, n_un = gate_inputs.unpinned(o_cfg, stale), gate_inputs.unpinned(n_cfg, stale)
        out.append(Pair(o, n, gate_inputs.call_site_inputs(o_in, o_un), gate_inputs.call_site_inputs(n_in, n_un), o_un, n_un,
                         role=Role.CALL_SITE))
    was = {c.key for c in gate_inputs.contradictions(o, o_cfg, o_in.recorded, base.source)}   # the base's own, already there
    said = [c.line() for c in gate_inputs.contradictions(n, pair.new_config, pair.new_inputs.recorded, source)
            if c.key not in was]
    if said:
        out.append(dataclasses.replace(pair, role=Role.PIN, said=tuple(said)))
    return out
