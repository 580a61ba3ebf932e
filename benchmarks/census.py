"""Census of issue 37: how many of a repository's Triton jit functions does ptxdiff see, and how
many changed kernels of its newest kernel-changing commits get a measured row (zero config)?

    python benchmarks/census.py static REPO_GIT_DIR... [--json OUT_DIR]
    python benchmarks/census.py diff CLONE [--commits 10] [--box 480] [--per-commit 240] [--json OUT_DIR]
    python benchmarks/census.py silence CLONE OUT_DIR/diff/NAME.diff.json   # the silence, again, no compile
    python benchmarks/census.py scan REPO_GIT_DIR --static NAME.static.json [--json OUT_DIR]  # silence only
    python benchmarks/census.py render OUT_DIR [--never-used a+b,c+d] > table.md

`static` (cheap, no compile): an independent AST counter finds every function whose object
`triton.jit` produces at HEAD, under any spelling, and compares it with what ptxdiff's discovery
finds (`ptxdiff.discovery.kernels.discover` and `triton_kinds`, the recognition it uses):

- ground truth: a `def` (at any depth: module, `if`/`try` blocks, class bodies, function bodies)
  that is decorated by, or passed to (`k = triton.jit(k)`, `triton.autotune(...)(triton.jit(k))`),
  an expression that resolves to `triton.jit`/`triton.autotune`/`triton.heuristics`: through
  `import triton [as X]`, `from triton[.runtime[.jit]] import jit [as J]`, module-level aliases
  (`J = triton.jit`), or the repository's own decorator functions and factories (a `def` whose
  body calls or returns such an expression, to a fixed point, matched by name across the
  repository). `@gluon.jit` kernels are counted, as gluon. Decorators of other JIT compilers
  (numba, cute, jax, torch) are not triton.jit and do not count.
- kernel or helper: a jit function called by name from another jit function's body and never
  launched (`name[grid](...)`) nor autotuned/heuristics-decorated is a helper; the rest are kernels
  (ptxdiff's rule, computed independently).
- liberal: defs that call device-only `tl.` operations (`tl.load`, `tl.program_id`, ...) but
  that no triton.jit chain reaches, reported apart (kernels of spellings this counter misses
  too, or dead code).
- a miss: a ground-truth function that ptxdiff's recognition does not mark as jit (the kernel
  and its rows are then absent, silently), classed by its spelling, first match: parse error
  (Python 3.11 cannot parse its file), class body, nested def, call form, own decorator, alias,
  other.  Found functions under other-backend paths (real_repos.NON_NVIDIA) and gluon kernels are
  counted apart: ptxdiff compiles them as NVIDIA kernels.

`diff`: the newest first-parent commits (at most `--commits`) where the counter sees a changed,
added or removed jit function on an NVIDIA path (ASTs compared, docstrings dropped), each run as
`ptxdiff diff C^ C --format json -q` (no config, the default cache) under a timeout, until the
per-repository time box ends. Per commit: the changed NVIDIA kernels ptxdiff lists and how many are
measured (benchmarks/real_repos.py's kernel_verdicts / broken_source / cause), and the kernels the
counter sees changed that the report does not list at all (silence).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_repos

KINDS = ("jit", "autotune", "heuristics")
DEVICE_OPS = {"program_id", "load", "store", "arange", "dot", "atomic_add", "atomic_cas", "atomic_max", "make_block_ptr",
              "num_programs", "advance", "make_tensor_descriptor", "zeros", "full", "dot_scaled", "atomic_xchg",
              "atomic_min", "debug_barrier", "cumsum", "reduce", "associative_scan"}
OTHER_JITS = ("numba", "cutlass", "cute", "jax", "torch", "taichi", "warp", "cupy", "tilelang", "helion", "cuda",
              "mlx", "tvm", "cuda.tile", "ct", "pallas")
MISS_ORDER = ("parse error", "class body", "nested def", "call form", "own decorator", "alias", "other")
JIT_LINE = re.compile(r"^[ \t]*@[\w.]*jit\b.*\n(?:[ \t]*@.*\n)*[ \t]*def[ \t]+(\w+)", re.MULTILINE)


# -- the independent counter ------------------------------------------------------------------
class ModuleFacts:
    """What one module binds to triton's decorators, and its defs with their context."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.error = None
        self.env: dict[str, str] = {}          # local name -> "triton", "triton.language", "triton.jit", ...
        self.foreign: set[str] = set()         # names imported from other JIT packages
        self.defs: list[tuple[ast.FunctionDef, tuple[str, ...]]] = []  # def, enclosing kinds ("class"/"def")
        try:
            self.tree = ast.parse(text)
        except (SyntaxError, ValueError) as e:
            self.tree = None
            self.error = f"{type(e).__name__}: {e}"
            return
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "triton" or a.name.startswith("triton."):
                        if a.asname:
                            self.env[a.asname] = a.name
                        else:
                            self.env["triton"] = "triton"
                    elif a.name.split(".")[0] in OTHER_JITS:
                        self.foreign.add(a.asname or a.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if node.module == "triton" or node.module.startswith("triton."):
                        self.env[a.asname or a.name] = f"{node.module}.{a.name}"
                    elif node.module.split(".")[0] in OTHER_JITS:
                        self.foreign.add(a.asname or a.name)
            if isinstance(node, ast.ImportFrom) and (node.level or not (node.module or "").startswith("triton")):
                for a in node.names:   # re-exported by a repository module: `from .common import tl, triton`
                    if a.name == "triton" or a.name == "tl":
                        self.env.setdefault(a.asname or a.name, "triton" if a.name == "triton" else "triton.language")
        # module-level aliases: J = triton.jit (also inside if/try at top level)
        for _ in range(2):
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    kind = self.resolve(node.value, set())
                    if kind and not isinstance(node.value, ast.Call):
                        self.env[node.targets[0].id] = "triton." + kind if kind in KINDS else kind
        self._collect(self.tree, ())

    def _collect(self, node, ctx):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.append((child, ctx))
                self._collect(child, ctx + ("def",))
            elif isinstance(child, ast.ClassDef):
                self._collect(child, ctx + ("class",))
            else:
                self._collect(child, ctx)

    def chain(self, node) -> list[str]:
        if isinstance(node, ast.Call):
            node = node.func
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return [node.id] + parts[::-1]
        return []

    def resolve(self, node, factories: set[str]) -> str | None:
        """'jit' / 'autotune' / 'heuristics' / 'gluon' / 'own' for an expression naming one of them."""
        c = self.chain(node)
        if not c:
            return None
        if c[0] in self.foreign:
            return None
        root = self.env.get(c[0])
        if root is not None:
            full = ".".join([root, *c[1:]])
            if "gluon" in full and full.endswith(".jit"):
                return "gluon"
            if full.startswith("triton"):
                last = full.rsplit(".", 1)[-1]
                if last in KINDS and full in (f"triton.{last}", f"triton.runtime.{last}", f"triton.runtime.jit.{last}",
                                              f"triton.runtime.autotuner.{last}", f"triton.runtime.jit.{last}"):
                    return last
                if last in KINDS and ".language." not in full:
                    return last
            return None
        if c[-1] in factories:   # the repository's own (even one named `jit`, `@triton_dist.jit`)
            return "own"
        return None

    def is_device_tl(self, fn) -> bool:
        tls = {k for k, v in self.env.items() if v in ("triton.language", "triton.language.core")}
        if not tls:
            return False
        todo = list(ast.iter_child_nodes(fn))
        while todo:   # its own body, not the defs nested in it
            n = todo.pop()
            if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(n))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                    and n.func.value.id in tls and n.func.attr in DEVICE_OPS:
                return True
        return False


def factory_names(mods: dict[str, ModuleFacts]) -> set[str]:
    """Names of the repository's own functions that return/produce triton.jit (to a fixed point)."""
    names: set[str] = set()
    while True:
        before = len(names)
        for m in mods.values():
            for fn, ctx in m.defs:
                if fn.name in names or ctx:   # module-level defs only: nested names are local
                    continue
                decos = {id(d) for n in ast.walk(fn) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                         for d in n.decorator_list}
                for n in ast.walk(fn):
                    if id(n) in decos:
                        continue
                    if isinstance(n, ast.Call) and m.resolve(n.func, names) in ("jit", "own"):
                        names.add(fn.name)
                        break
                    if isinstance(n, ast.Return) and n.value is not None and not isinstance(n.value, ast.Call) and \
                            m.resolve(n.value, names) in ("jit", "own"):
                        names.add(fn.name)
                        break
        if len(names) == before:
            return names


def ground_truth(mods: dict[str, ModuleFacts]) -> tuple[list[dict], list[dict], set[str]]:
    factories = factory_names(mods)
    found: list[dict] = []
    liberal: list[dict] = []
    for path, m in mods.items():
        if m.error:
            if "triton" in m.text:
                for match in JIT_LINE.finditer(m.text):
                    line = m.text.count("\n", 0, match.start()) + 1
                    found.append({"path": path, "name": match.group(1), "line": line, "spelling": "decorator",
                                  "where": "module", "kinds": ["jit"], "parse_error": m.error, "gluon": False})
            continue
        # call forms: X = triton.jit(f) / triton.autotune(...)(triton.jit(f)) / jit(f) ...
        called: dict[str, int] = {}
        for n in ast.walk(m.tree):
            if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name):
                kind = m.resolve(n.func, factories)
                if kind is None and isinstance(n.func, ast.Call):   # triton.autotune(...)(f), triton.jit(**kw)(f)
                    kind = m.resolve(n.func.func, factories)
                if kind in (*KINDS, "own", "gluon"):
                    called[n.args[0].id] = n.lineno
        for fn, ctx in m.defs:
            kinds, spells, gluon = set(), set(), False
            for d in fn.decorator_list:
                k = m.resolve(d, factories)
                if not k:
                    continue
                c = m.chain(d)
                gluon |= k == "gluon"
                kinds.add("jit" if k in ("own", "gluon") else k)
                spells.add("own decorator" if k == "own" else "gluon" if k == "gluon" else
                           ("decorator" if c and c[-1] in KINDS else "alias") + (":jit" if k == "jit" else ""))
            # what made it a jit function: triton.jit itself (by name, by alias), else the repository's
            # own decorator, else autotune/heuristics alone
            spell = next((s.partition(":")[0] for s in ("decorator:jit", "gluon", "alias:jit", "own decorator",
                                                         "decorator", "alias") if s in spells), None)
            if not kinds and fn.name in called:
                kinds, spell = {"jit"}, "call form"
            if not kinds:
                if m.is_device_tl(fn):
                    liberal.append({"path": path, "name": fn.name, "line": fn.lineno,
                                    "where": "class body" if "class" in ctx else "nested def" if "def" in ctx else "module"})
                continue
            where = "class body" if "class" in ctx else "nested def" if "def" in ctx else "module"
            found.append({"path": path, "name": fn.name, "line": fn.lineno, "spelling": spell, "where": where,
                          "kinds": sorted(kinds), "parse_error": None, "gluon": gluon,
                          "method": where == "class body" and bool(fn.args.args) and fn.args.args[0].arg == "self"})
    # helpers: called by name inside another jit function, never launched, not autotuned
    jit_names = {f["name"] for f in found}
    called_in_jit: set[str] = set()
    launched: set[str] = set()
    for path, m in mods.items():
        if m.error:
            continue
        bodies = {(f["name"], f["line"]) for f in found if f["path"] == path}
        for fn, _ in m.defs:
            if (fn.name, fn.lineno) in bodies:
                for n in ast.walk(fn):   # called, or passed (`gl.warp_specialize([(part, args)])`)
                    if isinstance(n, (ast.Name, ast.Attribute)):
                        c = m.chain(n)
                        if c and c[-1] in jit_names and c[-1] != fn.name:
                            called_in_jit.add(c[-1])
        for n in ast.walk(m.tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
                c = m.chain(n.func.value)
                if c:
                    launched.add(c[-1])
    for f in found:
        f["helper"] = f.get("method", False) or f["name"] in called_in_jit and f["name"] not in launched and \
            not {"autotune", "heuristics"} & set(f["kinds"])   # a method (`self`): an aggregate's, never launched
    return found, liberal, factories


def read_modules(snapshot) -> dict[str, ModuleFacts]:
    mods = {}
    for p in sorted(snapshot.paths):
        if not p.endswith(".py"):
            continue
        try:
            data = snapshot.read(p)
        except Exception:
            continue
        if b"triton" not in data:
            continue
        mods[p] = ModuleFacts(p, data.decode("utf-8", "replace"))
    return mods


def other_backend(path: str) -> bool:
    return bool(real_repos.NON_NVIDIA.search(path))


# -- ptxdiff's side -----------------------------------------------------------------------------
def _jit_defs(index, mod) -> set[str]:
    """The names of the defs of a parsed module that ptxdiff's recognition marks as jit: through
    the one resolver where the code has it (`jit_objects`), else by decorator (before issue 37)."""
    try:
        from ptxdiff.discovery.decorators import jit_objects
        from ptxdiff.discovery.spelling import Spelling
    except ImportError:
        from ptxdiff.discovery.decorators import triton_kinds
        from ptxdiff.source.modules import nested_statements
        return {stmt.name for top in mod.tree.body for stmt in nested_statements(top)
                if isinstance(stmt, ast.FunctionDef) and "jit" in triton_kinds(index, mod, stmt)}
    return {found.fn.name for found in jit_objects(Spelling(index), mod)}


def recognized(snapshot, files: set[str]) -> set[str]:
    """Ids of the defs of these files that ptxdiff's recognition marks as jit (kernel or helper: a
    changed helper is seen, through the kernels that call it)."""
    from ptxdiff.source.modules import ModuleIndex
    index = ModuleIndex(snapshot, ())
    out = set()
    for path in sorted(f for f in files if f in snapshot.paths):
        mod = index.parse(path)
        if mod.error or mod.tree is None:
            continue
        out |= {f"{path}::{name}" for name in _jit_defs(index, mod)}
    return out


def short_id(kernel: str) -> tuple[str, str]:
    """(path, name) of a kernel id: ptxdiff names a kernel defined in a function or a class by its
    qualified name (`test_fn.simple_kernel`, `Op.forward`), the counter by its def's name."""
    path, _, name = kernel.partition("::")
    return path, name.rsplit(".", 1)[-1]


def helpers_of(clone: str, rev: str, files: set[str]) -> set[tuple[str, str]]:
    """(path, name) of the defs of `files` that ptxdiff's discovery of either side takes for jit
    helpers (recognized as jit, not a kernel): a changed helper shows on the kernels that call it,
    so the counter calling it a kernel is no silence of ptxdiff's."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.git.repo import Repo
    r = Repo(clone, fetches=False)
    out: set[tuple[str, str]] = set()
    for side in (f"{rev}^", rev):
        snap = r.snapshot(r.side(side))
        kernels = {short_id(k) for k in discover(snap, paths=files).kernels}
        out |= {short_id(k) for k in recognized(snap, files)} - kernels
    return out


def ptxdiff_view(snapshot):
    """(path, name) of every def ptxdiff marks as jit (triton_kinds), the kernel ids discover()
    reports, and the files it reports as broken."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.source.modules import ModuleIndex
    index = ModuleIndex(snapshot, ())
    jit: set[tuple[str, str]] = set()
    for path in sorted(p for p in snapshot.paths if p.endswith(".py")):
        data = snapshot.read(path)
        if b"triton" not in data and b"jit" not in data:
            continue
        mod = index.parse(path)
        if mod.error or mod.tree is None:
            continue
        jit |= {(path, name) for name in _jit_defs(index, mod)}
    d = discover(snapshot)
    return jit, set(d.kernels), set(d.broken)


def classify(f: dict) -> str:
    if f["parse_error"]:
        return "parse error"
    if f["where"] in ("class body", "nested def"):
        return f["where"]
    if f["spelling"] in ("call form", "own decorator", "alias"):
        return f["spelling"]
    return "other"


def snippet(text: str, line: int, n: int = 4) -> str:
    lines = text.splitlines()
    lo = max(0, line - 3)
    return "\n".join(lines[lo:line + n - 2])


def static(git_dir: str, name: str) -> dict:
    from ptxdiff.git.repo import Repo
    r = Repo(git_dir, fetches=False)
    side = r.side("HEAD")
    snap = r.snapshot(side)
    t0 = time.perf_counter()
    mods = read_modules(snap)
    gt, liberal, factories = ground_truth(mods)
    jit, kernels, broken = ptxdiff_view(snap)
    out = {"repo": name, "head": side.commit, "seconds": 0.0, "factories": sorted(factories),
           "jit": len(gt), "kernels": sum(not f["helper"] for f in gt), "helpers": sum(f["helper"] for f in gt),
           "found": 0, "found_kernels": 0, "reported_kernels": len(kernels), "nvidia_jit": 0, "nvidia_found": 0,
           "other_backend": 0, "gluon": 0, "misses": Counter(), "miss_kernels": Counter(), "examples": {},
           "liberal": len(liberal), "liberal_examples": [], "broken": sorted(broken)}
    for f in gt:
        key = (f["path"], f["name"])
        ob = other_backend(f["path"])
        out["other_backend"] += ob
        out["gluon"] += f["gluon"]
        hit = key in jit
        out["found"] += hit
        if not ob and not f["gluon"]:
            out["nvidia_jit"] += 1
            out["nvidia_found"] += hit
        if not f["helper"]:
            out["found_kernels"] += hit
        if not hit:
            cls = classify(f)
            out["misses"][cls] += 1
            if not f["helper"]:
                out["miss_kernels"][cls] += 1
            ex = out["examples"].setdefault(cls, [])
            if len(ex) < 3:
                ex.append({"path": f["path"], "name": f["name"], "line": f["line"], "helper": f["helper"],
                           "text": snippet(mods[f["path"]].text, f["line"])})
    # the other way: defs ptxdiff marks as jit that the counter does not (a check of the counter)
    mine = {(f["path"], f["name"]) for f in gt}
    extra = sorted(jit - mine)
    out["ptxdiff_only"] = len(extra)
    out["ptxdiff_only_examples"] = [f"{p}::{n}" for p, n in extra[:5]]
    for f in liberal[:5]:
        out["liberal_examples"].append({**f, "text": snippet(mods[f["path"]].text, f["line"])})
    out["liberal_where"] = Counter(f["where"] for f in liberal)
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


# -- diffs --------------------------------------------------------------------------------------
def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=True).stdout


def _show(repo: str, rev: str, path: str) -> str | None:
    p = subprocess.run(["git", "-C", repo, "show", f"{rev}:{path}"], capture_output=True)
    return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None


def _strip_doc(fn) -> str:
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) and \
        isinstance(getattr(fn.body[0], "value", None), ast.Constant) and isinstance(fn.body[0].value.value, str) \
        else fn.body
    clone = ast.FunctionDef(name=fn.name, args=fn.args, body=body, decorator_list=fn.decorator_list,
                            returns=fn.returns, type_comment=None)
    return ast.dump(clone, include_attributes=False)


def jit_functions(path: str, text: str | None, factories: set[str]) -> dict[str, tuple[str, bool]]:
    """name -> (AST dump, helper-like) of the file's jit functions (single-file view)."""
    if text is None:
        return {}
    m = ModuleFacts(path, text)
    if m.error:
        return {}
    gt, _, _ = ground_truth({path: m}) if not factories else _gt_with(m, factories)
    defs = {(fn.name, fn.lineno): fn for fn, _ in m.defs}
    return {f["name"]: (_strip_doc(defs[(f["name"], f["line"])]), f["helper"]) for f in gt}


def _gt_with(m: ModuleFacts, factories: set[str]):
    # the repository's factory names, known from HEAD, matched in this file
    fake = ModuleFacts("__factories__.py", "\n".join(f"import triton\ndef {n}(*a, **k):\n    return triton.jit(*a, **k)"
                                                      for n in sorted(factories)))
    gt, liberal, f = ground_truth({m.path: m, fake.path: fake})
    return [g for g in gt if g["path"] == m.path], liberal, f


def changed_kernels(repo: str, rev: str, factories: set[str]) -> tuple[set[str], set[str]]:
    """Kernel ids (path::name) the counter sees changed/added/removed by `rev` on NVIDIA paths, and
    changed helper ids."""
    kernels, helpers = set(), set()
    gone, came = {}, {}   # one side only: (name, AST) -> id, to pair up moved kernels
    # a file git sees renamed (`-M`, changed or not) is one file under its new path, as ptxdiff pairs it
    for line in _git(repo, "diff-tree", "--no-commit-id", "-r", "-M", "--name-status", f"{rev}^", rev).split("\n"):
        status, *paths = line.split("\t")
        if not paths:
            continue
        was, f = (paths[0], paths[-1]) if status.startswith("R") else (paths[0], paths[0])
        if not f.endswith(".py") or other_backend(f):
            continue
        old, new = _show(repo, f"{rev}^", was), _show(repo, rev, f)
        if "triton" not in (old or "") + (new or ""):
            continue
        a, b = jit_functions(f, old, factories), jit_functions(f, new, factories)
        for name in set(a) | set(b):
            if a.get(name, (None,))[0] != b.get(name, (None,))[0]:
                helper = (b.get(name) or a.get(name))[1]
                kid = f"{was if name not in b else f}::{name}"   # a removed kernel keeps its old path, as ptxdiff's row
                (helpers if helper else kernels).add(kid)
                if name not in b:
                    gone[(name, a[name][0])] = kid
                elif name not in a:
                    came[(name, b[name][0])] = kid
    for key in set(gone) & set(came):   # moved to another file unchanged: not a change of the kernel
        kernels -= {gone[key], came[key]}
        helpers -= {gone[key], came[key]}
    return kernels, helpers


def diff(clone: str, commits: int, box: float, per_commit: float, factories: set[str], jobs: int,
         only: set[str] | None = None) -> dict:
    start = time.perf_counter()
    stats = {"repo": Path(clone).name, "head": _git(clone, "rev-parse", "HEAD").strip(), "commits": [],
             "kernels": 0, "measured": 0, "silent": 0, "listed_changed": 0, "counter_changed": 0,
             "other_backends": 0, "broken": 0, "failures": Counter(), "examples": {}, "silent_examples": [],
             "timed_out": [], "scanned": 0, "stopped": ""}
    revs = [_git(clone, "rev-parse", r).strip() for r in sorted(only)] if only else _kernel_file_log(clone)
    for rev in revs:
        if len(stats["commits"]) >= commits:
            break
        if time.perf_counter() - start > box:
            stats["stopped"] = f"time box {box:.0f}s"
            break
        stats["scanned"] += 1
        try:
            ck, ch = changed_kernels(clone, rev, factories)
        except subprocess.CalledProcessError:
            continue  # a root commit
        if not ck and not ch:
            continue
        left = max(30.0, min(per_commit, box - (time.perf_counter() - start)))
        cmd = [sys.executable, "-m", "ptxdiff", "diff", f"{rev}^", rev, "--format", "json", "-q", "--jobs", str(jobs)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=clone, capture_output=True, text=True, timeout=left)
            try:
                report = json.loads(proc.stdout) if proc.returncode in (0, 1) else None
            except json.JSONDecodeError:
                report = None
            if report is None:
                report = {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1], "kernels": []}
        except subprocess.TimeoutExpired:
            report = {"error": f"timed out after {left:.0f}s (census)", "kernels": []}
            stats["timed_out"].append(rev[:10])
        took = time.perf_counter() - t0
        verdicts = real_repos.kernel_verdicts(report)
        broken = real_repos.broken_source(report)
        nvidia = {k: v for k, v in verdicts.items() if not other_backend(k.partition("::")[0]) and k not in broken}
        # kernels ptxdiff shows as another backend's (a note, no row: ROCm by what it imports, Gluon,
        # a triton fork's builtins): listed, and not counted among the changed NVIDIA kernels
        # and a name the module binds to triton's own under the compiling triton (`gather = tl.gather`
        # in the `else` of a feature test): no kernel there, said in a line
        noted = {m.split(": ", 1)[0] for m in report.get("messages") or ()
                 if " kernel: not compiled (" in m or ": not a kernel under this triton: " in m}
        listed = {short_id(k) for k in [*verdicts, *noted]}
        files = {f for f in _git(clone, "diff-tree", "--no-commit-id", "-r", "--name-only", f"{rev}^", rev).split("\n")
                 if f.endswith(".py")}
        seen = listed | helpers_of(clone, rev, files)
        silent = sorted(k for k in ck if short_id(k) not in seen)
        ck = {k for k in ck if short_id(k) not in {short_id(n) for n in noted}}
        timed = bool(report.get("error"))   # timed out, or ptxdiff exited with an error (refused the command)
        # such a commit: its counter-changed kernels count as changed and not measured, not as silence
        n_kernels = len(set(nvidia) | set(ck)) if timed else len(nvidia) + len(silent)
        measured = sum(m for _, _, m in nvidia.values())
        specs = sum(1 for r in report["kernels"] if r["kernel"] in nvidia)   # spec rows of those kernels (issue 40)
        stats["specs"] = stats.get("specs", 0) + specs
        stats["commits"].append({"rev": rev[:10], "listed": len(nvidia), "measured": measured, "silent": silent,
                                 "specs": specs,
                                 "counter": sorted(ck), "helpers": sorted(ch), "seconds": round(took, 1),
                                 "error": report.get("error"),
                                 "other_backends": len(verdicts) - len(nvidia) - len(broken) + len(noted)})
        stats["kernels"] += n_kernels
        stats["listed_changed"] += len(nvidia)
        stats["measured"] += measured
        stats["silent"] += 0 if timed else len(silent)
        stats["errored_kernels"] = stats.get("errored_kernels", 0) + (len(set(nvidia) | set(ck)) if timed else 0)
        stats["counter_changed"] += len(ck)
        stats["other_backends"] += len(verdicts) - len(nvidia) - len(broken) + len(noted)
        stats["broken"] += len(broken)
        if not timed:
            for k in silent:
                if len(stats["silent_examples"]) < 6:
                    stats["silent_examples"].append(f"{rev[:10]} {k}")
        failed = {}
        for r in report["kernels"]:
            if r["kernel"] in nvidia and not nvidia[r["kernel"]][2] and r.get("error"):
                failed.setdefault(r["kernel"], r["error"])
        if report.get("error"):
            c = "timed out (census box)" if timed else "ptxdiff exited with an error"
            stats["failures"][c] += max(1, len(ck)) if timed else 1
            stats["examples"].setdefault(c, f"{rev[:10]}: {report['error'][:300]}")
        for k, error in failed.items():
            c = real_repos.cause(error)
            stats["failures"][c] += 1
            stats["examples"].setdefault(c, f"{rev[:10]} {k}: {error[:300]}")
        print(f"  {rev[:10]} listed {len(nvidia)} measured {measured} silent {0 if timed else len(silent)} "
              f"(counter {len(ck)}, helpers {len(ch)}) specs {specs} {took:.0f}s {report.get('error') or ''}", flush=True)
    stats["seconds"] = round(time.perf_counter() - start)
    return stats


def _kernel_file_log(repo: str) -> list[str]:
    """First-parent commits, newest first, that touch a .py file holding `triton` at HEAD (as
    real_repos.kernel_commits searches), so that repositories where kernels are a small part are
    searched deep enough."""
    try:
        files = _git(repo, "grep", "-l", "-e", "triton", "HEAD", "--", "*.py").split()
    except subprocess.CalledProcessError:
        files = []
    files = [f.partition(":")[2] for f in files] or ["*.py"]
    return _git(repo, "log", "--first-parent", "--format=%H", "-n", "400", "--", *files).split()


def silence(clone: str, diff_json: Path, factories: set[str]) -> dict:
    """For every commit a `diff` run took (finished, refused or timed out): the kernels the counter
    sees changed that ptxdiff's discovery (both sides, `discover`, fingerprints compared: what a
    diff would list, no compile) does not list. Written back into the diff JSON."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.git.repo import Repo
    data = json.loads(diff_json.read_text())
    r = Repo(clone, fetches=False)
    total = 0
    for c in data["commits"]:
        rev = _git(clone, "rev-parse", c["rev"]).strip()
        ck, ch = changed_kernels(clone, rev, factories)   # again: moved kernels are no change
        c["counter"], c["helpers"] = sorted(ck), sorted(ch)
        files = {f for f in _git(clone, "diff-tree", "--no-commit-id", "-r", "--name-only", f"{rev}^", rev).split("\n")
                 if f.endswith(".py")}
        snaps = [r.snapshot(r.side(x)) for x in (f"{rev}^", rev)]
        old, new = (discover(sn, paths=files).kernels for sn in snaps)
        listed = {k for k in set(old) | set(new) if k not in old or k not in new or old[k].fingerprint != new[k].fingerprint}
        seen = listed | recognized(snaps[0], files) | recognized(snaps[1], files)
        c["discovery_listed"] = len(listed)
        c["silent_discovery"] = sorted(k for k in c["counter"] if k not in seen)
        total += len(c["silent_discovery"])
    data["silent_discovery"] = total
    diff_json.write_text(json.dumps(data, indent=1))
    return data


def scan(git_dir: str, commits: int, factories: set[str], box: float) -> dict:
    """No compile: the newest `commits` kernel-changing commits (as `diff` picks them) and, for each,
    the kernels the counter sees changed that ptxdiff's discovery of both sides does not list."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.git.repo import Repo
    r = Repo(git_dir, fetches=False)
    start = time.perf_counter()
    out = {"commits": [], "counter_changed": 0, "silent_discovery": 0, "scanned": 0, "stopped": ""}
    for rev in _kernel_file_log(git_dir):
        if len(out["commits"]) >= commits:
            break
        if time.perf_counter() - start > box:
            out["stopped"] = f"time box {box:.0f}s"
            break
        out["scanned"] += 1
        try:
            ck, ch = changed_kernels(git_dir, rev, factories)
        except subprocess.CalledProcessError:
            continue
        if not ck and not ch:
            continue
        files = {f for f in _git(git_dir, "diff-tree", "--no-commit-id", "-r", "--name-only", f"{rev}^", rev).split("\n")
                 if f.endswith(".py")}
        snaps = [r.snapshot(r.side(x)) for x in (f"{rev}^", rev)]
        old, new = (discover(sn, paths=files).kernels for sn in snaps)
        listed = {k for k in set(old) | set(new) if k not in old or k not in new or old[k].fingerprint != new[k].fingerprint}
        seen = listed | recognized(snaps[0], files) | recognized(snaps[1], files)
        silent = sorted(k for k in ck if k not in seen)
        out["commits"].append({"rev": rev[:10], "counter": sorted(ck), "helpers": sorted(ch),
                               "discovery_listed": len(listed), "silent_discovery": silent})
        out["counter_changed"] += len(ck)
        out["silent_discovery"] += len(silent)
    out["seconds"] = round(time.perf_counter() - start)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("static")
    s.add_argument("git_dirs", nargs="+")
    s.add_argument("--json", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("clone")
    d.add_argument("--commits", type=int, default=10)
    d.add_argument("--box", type=float, default=480)
    d.add_argument("--per-commit", type=float, default=240)
    d.add_argument("--jobs", type=int, default=1)
    d.add_argument("--json", type=Path)
    d.add_argument("--static", type=Path, help="the static JSON of this repository (its factory names)")
    d.add_argument("--only", default="", help="these commits again (comma-separated), merged into the JSON")
    q = sub.add_parser("silence")
    q.add_argument("clone")
    q.add_argument("diff_json", type=Path)
    sc = sub.add_parser("scan")
    sc.add_argument("git_dir")
    sc.add_argument("--static", type=Path, required=True)
    sc.add_argument("--commits", type=int, default=10)
    sc.add_argument("--box", type=float, default=300)
    sc.add_argument("--json", type=Path)
    r = sub.add_parser("render")
    r.add_argument("dir", type=Path)
    r.add_argument("--never-used", default="")
    args = ap.parse_args(argv)
    if args.cmd == "static":
        for g in args.git_dirs:
            name = Path(g).parent.name if Path(g).name == "repo" else Path(g).name
            out = static(g, name)
            print(f"{name} {out['head'][:10]} jit {out['jit']} found {out['found']} kernels {out['kernels']} "
                  f"reported {out['reported_kernels']} misses {dict(out['misses'])} liberal {out['liberal']} "
                  f"({out['seconds']}s)", flush=True)
            if args.json:
                args.json.mkdir(parents=True, exist_ok=True)
                (args.json / f"{name}.static.json").write_text(json.dumps(out, indent=1))
    elif args.cmd == "diff":
        factories = set(json.loads(args.static.read_text())["factories"]) if args.static else set()
        only = set(filter(None, args.only.split(",")))
        out = diff(args.clone, args.commits, args.box, args.per_commit, factories, args.jobs, only)
        print(json.dumps({k: v for k, v in out.items() if k != "commits"}, default=str))
        if args.json:
            args.json.mkdir(parents=True, exist_ok=True)
            name = args.static.name.removesuffix(".static.json") if args.static else Path(args.clone).name
            out["repo"] = name
            target = args.json / f"{name}.diff.json"
            if only and target.exists():   # a re-run of some commits: replace them in the earlier run
                old = json.loads(target.read_text())
                again = {c["rev"]: c for c in out["commits"]}
                old["commits"] = [{**again[c["rev"]], "again": True} if c["rev"] in again else c for c in old["commits"]]
                failures = Counter(old["failures"])
                failures.update(out["failures"])
                old["failures"] = failures
                old["examples"] = {**out["examples"], **old["examples"]}
                old["rerun_seconds"] = out["seconds"]
                out = old
            target.write_text(json.dumps(out, indent=1))
    elif args.cmd == "scan":
        name = args.static.name.removesuffix(".static.json")
        out = {"repo": name, **scan(args.git_dir, args.commits, set(json.loads(args.static.read_text())["factories"]),
                                    args.box)}
        print(name, "commits", len(out["commits"]), "counter-changed kernels", out["counter_changed"],
              "never listed", out["silent_discovery"], f"({out['seconds']}s)", flush=True)
        if args.json:
            args.json.mkdir(parents=True, exist_ok=True)
            (args.json / f"{name}.scan.json").write_text(json.dumps(out, indent=1))
    elif args.cmd == "silence":
        found = args.diff_json.parent.parent / f"{args.diff_json.name.removesuffix('.diff.json')}.static.json"
        factories = set(json.loads(found.read_text())["factories"]) if found.exists() else set()
        out = silence(args.clone, args.diff_json, factories)
        print(out["repo"], "never listed (discovery):", out["silent_discovery"], "of", out["counter_changed"],
              [(c["rev"], len(c["silent_discovery"])) for c in out["commits"]])
    else:
        print(render(args.dir, set(filter(None, args.never_used.split(",")))))
    return 0


def render(folder: Path, never: set[str]) -> str:
    rows = ["| repo | HEAD | set | jit fns (counter) | kernels / helpers | found by ptxdiff | share | kernels reported "
            "| misses by class | other-backend / gluon | tl-using not jit | diffed commits | changed NVIDIA kernels "
            "| listed | measured | never listed | measured / listed (real_repos.py's share) | measured / changed |",
            "|" + "---|" * 18]
    tot = {g: Counter() for g in ("all", "never-used", "used")}
    details, dropped = [], []
    for p in sorted(folder.glob("*.static.json"), key=lambda p: p.name.lower()):
        s = json.loads(p.read_text())
        name = s["repo"]
        # a repository whose kernels the counter's spelling misses (Fast-LLM's `@triton_jit()`) but
        # ptxdiff reports, or its liberal count sees, stays: the counter is no judge of that
        if not s["jit"] and not s.get("reported_kernels") and not s.get("liberal"):
            dropped.append(f"{name} ({s['head'][:10]})")
            continue
        group = "never-used" if name in never else "used"
        dp = folder / f"{name}.diff.json"
        dd = json.loads(dp.read_text()) if dp.exists() else None
        misses = ", ".join(f"{k} {v}" for k, v in sorted(s["misses"].items(), key=lambda kv: -kv[1])) or "-"
        share = f"{100 * s['found'] / s['jit']:.0f}%" if s["jit"] else "-"
        if dd:
            # per commit: a commit the census's own time limit cut is left out of the shares (the cores
            # were shared); a commit ptxdiff refused counts its counter-changed kernels, none measured
            done = [c for c in dd["commits"] if not (c.get("error") or "").endswith("(census)")]
            cut = len(dd["commits"]) - len(done)
            listed = sum(c["listed"] for c in done)
            measured = sum(c["measured"] for c in done)
            silent = sum(len(c.get("silent_discovery", c["silent"])) for c in done)
            refused = sum(len(c["counter"]) for c in done if c.get("error"))
            n = listed + silent if not refused else listed + silent + sum(
                len([k for k in c["counter"] if k not in c.get("silent_discovery", [])]) for c in done if c.get("error"))
            dd.update(kernels=n, listed_changed=listed, measured=measured, silent=silent)
            stop = "; stopped: " + dd["stopped"] if dd["stopped"] else ""
            details.append(f"\n{name}: {len(dd['commits'])} commits diffed in {dd['seconds']}s "
                           f"({dd['scanned']} first-parent commits scanned{stop}"
                           f"{f'; {cut} cut by the census per-commit limit, left out of the shares' if cut else ''})")
            details += [f"  {c['rev']} listed {c['listed']} measured {c['measured']} never listed "
                        f"{len(c.get('silent_discovery', c['silent']))} "
                        f"(counter: {len(c['counter'])} changed kernels, {len(c['helpers'])} helpers) {c['seconds']}s"
                        + (f" error: {c['error'][:160]}" if c.get("error") else "") for c in dd["commits"]]
            fails = Counter({k: v for k, v in dd["failures"].items()
                             if k not in ("timed out (census box)", "ptxdiff exited with an error")})
            for c in done:
                if c.get("error"):   # the whole command refused: every changed kernel unmeasured
                    why = "ptxdiff refused the command: " + re.sub(r"triton[=<>!~]=?[\w.+]+", "triton<pin>", c["error"])[:90]
                    fails[why] += len([k for k in c["counter"] if k not in c.get("silent_discovery", [])])
                    dd["examples"].setdefault(why, f"{c['rev']}: {c['error']}")
            details += [f"  not measured: {v} x {k}: e.g. {dd['examples'].get(k, '')[:240]}"
                        for k, v in sorted(fails.items(), key=lambda kv: -kv[1])]
            details += [f"  never listed, e.g. {c['rev']} {k}" for c in dd["commits"]
                        for k in c.get("silent_discovery", c["silent"])][:3]
            dcells = (f"{len(done)}" + (f" (+{cut} cut)" if cut else ""), n, listed, measured, silent,
                      f"{100 * measured / listed:.0f}%" if listed else "-",
                      f"{100 * measured / n:.0f}%" if n else "-")
        elif (folder / f"{name}.scan.json").exists():
            sc = json.loads((folder / f"{name}.scan.json").read_text())
            dcells = (f"not diffed; {len(sc['commits'])} scanned without compiling", sc["counter_changed"], "", "",
                      sc["silent_discovery"], "", "")
            for g in ("all", group):
                tot[g]["scan_changed"] += sc["counter_changed"]
                tot[g]["scan_silent"] += sc["silent_discovery"]
            details.append(f"\n{name}: not diffed; {len(sc['commits'])} kernel-changing commits scanned without "
                           f"compiling ({sc['scanned']} first-parent commits, {sc['seconds']}s"
                           f"{'; stopped: ' + sc['stopped'] if sc['stopped'] else ''}): {sc['counter_changed']} kernels "
                           f"changed, {sc['silent_discovery']} never listed")
            details += [f"  never listed, e.g. {c['rev']} {k}" for c in sc["commits"] for k in c["silent_discovery"]][:3]
        else:
            dcells = ("not diffed", "", "", "", "", "", "")
        rows.append(f"| {name} | {s['head'][:10]} | {group} | {s['jit']} | {s['kernels']} / {s['helpers']} | {s['found']} | "
                    f"{share} | {s['reported_kernels']} | {misses} | {s['other_backend']} / {s['gluon']} | {s['liberal']} | "
                    + " | ".join(str(c) for c in dcells) + " |")
        for g in ("all", group):
            t = tot[g]
            t["repos"] += 1
            t["jit"] += s["jit"]
            t["found"] += s["found"]
            t["kernels"] += s["kernels"]
            t["reported"] += s["reported_kernels"]
            t["liberal"] += s["liberal"]
            for k, v in s["misses"].items():
                t["miss:" + k] += v
            if dd:
                t["diffed"] += 1
                t["commits"] += len(dd["commits"])
                t["changed"] += dd["kernels"]
                t["listed"] += dd["listed_changed"]
                t["measured"] += dd["measured"]
                t["silent"] += dd["silent"]
    rows.append("")
    for g in ("all", "never-used", "used"):
        t = tot[g]
        if not t["repos"]:
            continue
        misses = ", ".join(f"{k[5:]} {v}" for k, v in t.items() if k.startswith("miss:"))
        rows.append(f"- {g}: {t['repos']} repositories; jit functions {t['found']}/{t['jit']} found "
                    f"({100 * t['found'] / max(1, t['jit']):.1f}%), misses: {misses or 'none'}; {t['liberal']} tl-using defs "
                    f"no jit chain reaches; diffed {t['diffed']} repositories, {t['commits']} commits: "
                    f"{t['measured']}/{t['changed']} changed NVIDIA kernels measured "
                    f"({100 * t['measured'] / max(1, t['changed']):.0f}%; {t['measured']}/{t['listed']} of those listed, "
                    f"{100 * t['measured'] / max(1, t['listed']):.0f}%), {t['silent']} never listed"
                    + (f"; scanned without compiling: {t['scan_silent']} of {t['scan_changed']} changed kernels never listed"
                       if t["scan_changed"] else ""))
    if dropped:
        rows.append(f"- dropped (no jit function at HEAD, by the counter, ptxdiff or the liberal count): {', '.join(dropped)}")
    return "\n".join(rows + details)


if __name__ == "__main__":
    raise SystemExit(main())
