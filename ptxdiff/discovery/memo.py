"""Discovery results kept per git tree, and brought up to date from a neighbour instead of redone.

Discovering every kernel of a large repository (closures over hundreds of modules) costs
seconds; a comparison needs it on both sides, and `git diff` asks again and again. A tree's
discovery is stored once under the cache folder, keyed by the tree id. A side with no stored
discovery (the work tree, a new commit) starts from a neighbour's (HEAD's, the other side's):
only the kernels of changed files, and those whose effective source reads a changed file, are
discovered again. Everything stored is plain data (no AST).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptxdiff.binaries import fingerprint
from ptxdiff.discovery.callsites import Fact, FactKind
from ptxdiff.discovery.forks import GITMODULES
from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel, discover
from ptxdiff.discovery.params import Param
from ptxdiff.source.installs import DECLARING
from ptxdiff.source.modules import Files, ModuleIndex
from ptxdiff.store import Store

if TYPE_CHECKING:  # types only: pygit2 stays out of discovery
    from ptxdiff.git.repo import Snapshot

FORMAT = 34   # 19: the sorts a kernel compiles (the cost estimate); 20: pointers through whole aliases, counts in shapes;
# 21: launch arithmetic with a side it cannot read says no type; 22: kernels of one block are not each other's helpers;
# 23: constexprs a launch site passes one expression (`alike`); 24: a launch of another module's function of the
# same name launches no helper, in an address a word that says int (start_m) is an offset before a letter (M),
# a pre_hook's block shapes under `if FLAG:` and `BN // 2` (descriptor type templates), tl.range's switches,
# flags the kernel compiles one way only, a package vendored deep that imports itself, values handed to a helper's dot;
# 25: defaults evaluated where a function is made, a compare-and-swap lock's ints, an address's base handed on,
# a descriptor's block shape from the launch that makes it (TensorDescriptor.from_tensor(c, [BM, BN // 2])),
# a kernel defined twice is the later def; 26: a size a launch site computes carries the range its caps give;
# 27: a block's sizes, of any number of dimensions and products of sizes (`tl.zeros([BK * BK, BV])`);
# 28: the helpers each kernel reaches, so an update keeps a function its kept files call a helper;
# 29: a device function that takes a pointer and returns values is compiled in a harness that hands the pointer on;
# 30: a pre_hook's block shape held in a local under a flag; 31: the constants of a class another module defines;
# 32: a launch Python could not bind to the signature gives no facts; 33: a module guard's body runs through its
# own host calls (the evaluator's hints); 34: a dtype an integer-only operator takes is guessed tl.int32
KEEP = 64  # stored discoveries kept (least recently used go first)


def to_json(found: Discovery) -> dict[str, Any]:
    def param(p: Param) -> list[object]:
        return [p.name, p.constexpr, p.kind, [list(p.hint.values), p.hint.why, p.hint.branches] if p.hint else None, p.optional,
                p.written, p.converted]
    return {"format": FORMAT, "kernels": [
        {"id": k.id, "path": k.path, "name": k.name, "module": k.module, "lineno": k.lineno,
         "fingerprint": k.fingerprint, "params": [param(p) for p in k.params], "paths": sorted(k.paths),
         "names": sorted(k.names), "launch": [[n, [[f.kind, f.value, f.site] for f in facts]] for n, facts in k.launch],
         "alike": [list(group) for group in k.alike],
         "harness": k.harness, "harness_rank": k.harness_rank, "element_casts": k.element_casts, "probes": sorted(k.probes),
         "guards": [[d, list(names)] for d, names in k.guards], "hooks": [list(h) for h in k.hooks],
         "function": k.function, "unresolved": k.unresolved, "backend": k.backend, "fork": k.fork,
         "fork_builtins": list(k.fork_builtins),
         "tiles": [list(t) for t in k.tiles],
         "unrolled": [[[list(b) for b in loop] for loop in chain] for chain in k.unrolled], "sorts": k.sorts,
         "helpers": sorted(k.helpers)}
        for k in found.kernels.values()],
        "broken": [[b.path, b.error, list(b.names)] for b in found.broken.values()]}


def from_json(data: dict[str, Any]) -> Discovery:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("not a stored discovery")
    kernels = {}
    for k in data["kernels"]:
        params = tuple(Param(n, c, kind, Hint(tuple(h[0]), h[1], h[2]) if h else None, opt, written, converted)
                       for n, c, kind, h, opt, written, converted in k["params"])
        launch = tuple((n, tuple(Fact(FactKind(kind), tuple(value) if isinstance(value, list) else value, site)
                                 for kind, value, site in facts)) for n, facts in k["launch"])
        kernels[k["id"]] = Kernel(id=k["id"], path=k["path"], name=k["name"], module=k["module"], lineno=k["lineno"],
                                  fingerprint=k["fingerprint"], params=params, paths=frozenset(k["paths"]),
                                  names=frozenset(k["names"]), launch=launch, alike=tuple(tuple(g) for g in k["alike"]),
                                  harness=k["harness"],
                                  harness_rank=k["harness_rank"],
                                  element_casts=k["element_casts"], probes=frozenset(k["probes"]),
                                  guards=tuple((d, tuple(names)) for d, names in k["guards"]),
                                  hooks=tuple((setting, text, digest) for setting, text, digest in k["hooks"]),
                                  function=k["function"], unresolved=k["unresolved"], backend=k["backend"], fork=k["fork"],
                                  fork_builtins=tuple(k["fork_builtins"]),
                                  tiles=tuple(tuple(t) for t in k["tiles"]),
                                  unrolled=tuple(tuple((tuple(start), tuple(stop), tuple(step))
                                                       for start, stop, step in chain) for chain in k["unrolled"]),
                                  sorts=k["sorts"], helpers=frozenset(k["helpers"]))
    broken = {p: Broken(p, e, tuple(n)) for p, e, n in data["broken"]}
    return Discovery(kernels, broken)


def changed_paths(a: Snapshot, b: Snapshot) -> set[str]:
    """Python files, the files that declare the install (installs.py) and `.gitmodules` (a triton
    fork: forks.py), that differ between two snapshots (added, removed or edited): blob ids for
    commits, content hashes for the work tree."""
    paths = {p for p in a.paths | b.paths if p.endswith(".py") or p in DECLARING or p == GITMODULES}
    return {p for p in paths if p not in a or p not in b or a.content_id(p) != b.content_id(p)}


_LAUNCHED = re.compile(rb"\b([A-Za-z_]\w*)\s*\[")


def _touched(snapshot: Files, base_files: Files | None, roots: tuple[str, ...], changed: set[str]) -> set[str]:
    """Files whose kernels a change elsewhere can make or unmake, though their text is the same:
    a file that names a changed module (its own decorator, `triton_dist.jit`, decides what is a
    jit object there), a file a changed module imports (whether its jit functions are helpers
    depends on who calls them), and a file that defines a name a changed file launches
    (`f[grid]` makes a helper a kernel). Read from text, so it errs towards discovering again."""
    index = ModuleIndex(snapshot, roots)
    modules = {p for p in changed if p.endswith(".py")}
    # a module's last name (`jit` of triton_dist/jit.py, `triton_dist` of its __init__.py)
    # (a file name git holds in bytes that are not UTF-8 is a str with surrogate escapes)
    words = {name.encode("utf-8", "surrogateescape") for p in modules
             if (name := index.module_name(p).rsplit(".", 1)[-1])}
    launched: set[bytes] = set()
    imported: set[str] = set()
    sides = [(snapshot, index)] + ([(base_files, ModuleIndex(base_files, roots))] if base_files is not None else [])
    for files, side_index in sides:
        for path in modules & files.paths:
            launched |= set(_LAUNCHED.findall(files.read(path)))
            imported |= side_index.imported_paths(path)
    names = re.compile(rb"\b(?:" + b"|".join(re.escape(w) for w in sorted(words)) + rb")\b") if words else None
    defines = re.compile(rb"\bdef\s+(?:" + b"|".join(re.escape(n) for n in sorted(launched)) + rb")\s*\(") \
        if launched else None
    out = set(imported)
    for path in snapshot.paths:
        if not path.endswith(".py"):
            continue
        text = snapshot.read(path)
        if b"triton" not in text and b"jit" not in text:
            continue   # no kernel file (discover skips it)
        if names is not None and names.search(text) or defines is not None and defines.search(text):
            out.add(path)
    return out


def update(base: Discovery, snapshot: Files, roots: tuple[str, ...], changed: set[str],
           base_files: Files | None = None) -> Discovery:
    """`base` (a neighbouring tree's discovery, of `base_files`) brought to `snapshot`, where
    `changed` lists the paths that differ: kernels in changed files, kernels whose effective source
    reads one, and the files a change elsewhere can make or unmake kernels in (`_touched`) are
    discovered again; the rest are `base`'s, unchanged by construction, so the result is the one
    a discovery of the whole tree finds."""
    if not changed:
        return base
    if GITMODULES in changed:   # whether the repository builds a triton of its own: any kernel may be its
        return discover(snapshot, roots)
    stale_files = {k.path for k in base.kernels.values() if (k.paths | k.probes) & changed} | {
        p for p in changed if p.endswith(".py")} | {p for p in base.broken if p in changed}
    # a changed launch site changes what the kernel is given (call-site values)
    texts = [snapshot.read(p) for p in changed if p.endswith(".py") and p in snapshot]
    stale_files |= {k.path for k in base.kernels.values() if any(k.name.encode() + b"[" in t for t in texts)}
    stale_files |= _touched(snapshot, base_files, roots, changed)
    kernels = {kid: k for kid, k in base.kernels.items() if k.path not in stale_files}
    # the kept files' kernels still call what they called: a function of a file read again that
    # one of them calls is a helper, and a launch of one of them launches it, not a function of
    # that name in a file read again, as a discovery of the whole tree finds
    called = frozenset(h for k in kernels.values() for h in k.helpers)
    fresh = discover(snapshot, roots, paths={p for p in stale_files if p in snapshot}, called=called,
                     known=called | frozenset(kernels))
    kernels.update(fresh.kernels)
    broken = {p: b for p, b in base.broken.items() if p not in stale_files}
    broken.update(fresh.broken)
    return Discovery(kernels, broken)


def discoveries(cache_root: Path) -> Store:
    """Where stored discoveries live: `<cache>/discovery/`, one gzip'd JSON file per tree."""
    return Store(cache_root / "discovery", ".disc.gz", lambda value: isinstance(value, dict), FORMAT, fan_out=False)


class Memo:
    """Stored discoveries, keyed by tree id and salted by what discovery depends on."""

    def __init__(self, root: Path, roots: tuple[str, ...]):
        self.store = discoveries(root)
        tool = fingerprint()
        self.salt = hashlib.sha256(json.dumps([list(roots), tool["ptxdiff"], tool["source"]]).encode()).hexdigest()[:16]

    def get(self, tree: str) -> Discovery | None:
        data = self.store.get(f"{tree}-{self.salt}")
        try:
            return from_json(data) if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, tree: str, found: Discovery) -> None:
        self.store.put(f"{tree}-{self.salt}", to_json(found))
        self.store.prune(max_entries=KEEP)


class FileMemo:
    """The kernels of one file, as `discover(paths={path})` finds them, for every tree `ptxdiff log`
    looked at: one stored entry per file, read once and written once per walk, so a warm walk
    over hundreds of commits discovers nothing (history.py)."""

    def __init__(self, root: Path, roots: tuple[str, ...], path: str):
        self.store = discoveries(root)
        tool = fingerprint()
        self.key = "file-" + hashlib.sha256(json.dumps([list(roots), tool["ptxdiff"], tool["source"], path]).encode()
                                            ).hexdigest()[:24]
        stored = self.store.get(self.key)
        self.trees: dict[str, dict[str, Any]] = stored.get("trees", {}) if isinstance(stored, dict) else {}
        self.changed = False

    def get(self, tree: str) -> Discovery | None:
        try:
            return from_json(self.trees[tree]) if tree in self.trees else None
        except (ValueError, KeyError, TypeError):
            return None

    def put(self, tree: str, found: Discovery) -> None:
        self.trees[tree] = to_json(found)
        self.changed = True

    def save(self) -> None:
        if self.changed:
            self.store.put(self.key, {"trees": self.trees})
            self.store.prune(max_entries=KEEP)
            self.changed = False
