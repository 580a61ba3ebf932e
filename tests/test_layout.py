"""The house rules of the code, checked on the whole package: one package per stage holds
together only if no import cycle forms, no module reaches into another's private names, and
modules and functions stay small enough to read."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ptxdiff"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _trees() -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _imported(name: str, node: ast.AST) -> list[tuple[str, list[str]]]:
    """(module, names) for an import statement, relative imports resolved."""
    if isinstance(node, ast.Import):
        return [(a.name, []) for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            pkg = name.split(".") if MODULES[name].name == "__init__.py" else name.split(".")[:-1]
            base = ".".join(pkg[:len(pkg) - node.level + 1] + ([base] if base else []))
        return [(base, [a.name for a in node.names])]
    return []


def _edges(name: str, tree: ast.Module) -> set[str]:
    """Every ptxdiff module this one imports, at the top or inside a function."""
    out = set()
    for node in ast.walk(tree):
        for module, names in _imported(name, node):
            if not module.startswith("ptxdiff"):
                continue
            subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in MODULES]
            out |= set(subs) if subs and len(subs) == len(names) else {module}
    out.discard(name)
    return {m for m in out if m in MODULES and MODULES[m].name != "__init__.py" or m == "ptxdiff"} - {"ptxdiff"}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_even_through_imports_inside_functions():
    graph = {name: _edges(name, tree) for name, tree in _trees().items()}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# The stages, lowest first: each imports only stages before it (imports inside functions too).
# A stage is a sub-package of ptxdiff/ or one of its top-level modules.
STAGES = (
    "strenum",        # the base of every vocabulary: nothing of ptxdiff
    "errors",         # the one exception base: every stage raises it
    "fastio",         # the one atomic write: plain files, nothing of ptxdiff
    "targets",        # the GPU targets a compile is for: raises errors only
    "binaries",       # the compiler tools and a compile's fingerprint: discovery's memo and the runner read them
    "store",          # the one content-addressed store, written through fastio
    "source",         # parsed modules and AST helpers: nothing of ptxdiff below them
    "metrics",        # PTX and SASS parsing: pure
    "verdict",        # the verdict vocabulary and how two compiles of one spec differ: metrics only
    "git",            # the one way into git: errors and fastio only
    "repo_config",    # the repository's [tool.ptxdiff], read with source's helpers
    "user_settings",  # the user's PTXDIFF_* variables and ptxdiff.* git config: reads git
    "permissions",    # who may run a revision's code: repo_config and user_settings combined
    "sandbox",        # the workers' OS sandbox: bounds from user_settings
    "record",         # recorded launches: read from git revisions and source
    "discovery",      # kernels in source, stored discoveries keyed by binaries' fingerprint
    "evaluator",      # the restricted evaluator: asks discovery's spelling what a name means to triton
    "specs",          # values from declarations (evaluator), launches (record) and guesses (discovery)
    "instantiate",    # kernel objects built from source with specs' values
    "dynamic",        # running a kernel's old and new: the compile worker runs kernels too
    "compile",        # compiles instantiated kernels in the sandbox, measured by metrics
    "compare",        # pairs, measures (compile) and verdicts; the dynamic checks of compared rows
    "gate",           # what the pre-push gate decides, as data over compare's rows
    "report",         # renders compare's results and the gate's outcome
    "gitdiff",        # what git runs: the diff driver, the pre-push gate, and their install
    "corpus",         # the embedded corpus and the demo, through compare and report
    "cli",            # the commands, over every stage
    "driver",         # the diff driver's old import path (shims installed before the layout)
    "__main__",       # `python -m ptxdiff`
)


def _stage(module: str) -> str:
    return module.split(".")[1]


def _upward(graph: dict[str, set[str]], order: tuple[str, ...]) -> list[str]:
    """The module imports that make a stage import one above it in `order`."""
    floor = {stage: i for i, stage in enumerate(order)}
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _stage(a) != _stage(b) and floor[_stage(b)] > floor[_stage(a)])


def test_the_stages_form_a_line():
    graph = {name: _edges(name, tree) for name, tree in _trees().items() if name != "ptxdiff"}
    assert {_stage(name) for name in graph} == set(STAGES)
    assert _upward(graph, STAGES) == []


def test_the_stage_check_finds_an_import_upward():
    graph = {"ptxdiff.git.repo": {"ptxdiff.errors"}, "ptxdiff.errors": {"ptxdiff.git.values"},
             "ptxdiff.git.values": {"ptxdiff.git.repo"}}
    assert _upward(graph, ("errors", "git")) == ["ptxdiff.errors -> ptxdiff.git.values"]


def test_the_docs_show_the_declared_order():
    develop = (PACKAGE.parent / "docs" / "develop.md").read_text(encoding="utf-8")
    assert " -> ".join(STAGES) in " ".join(develop.split())


def _private_uses(name: str, tree: ast.Module) -> list[str]:
    bad = []
    aliases: set[str] = set()
    for node in ast.walk(tree):
        for module, names in _imported(name, node):
            if not module.startswith("ptxdiff"):
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__"):
                    bad.append(f"{name}:{node.lineno}: from {module} import {n}")
            if isinstance(node, ast.ImportFrom):
                aliases |= {a.asname or a.name for a in node.names if f"{module}.{a.name}" in MODULES}
            else:
                aliases |= {a.asname for a in node.names if a.asname}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.attr.startswith("_") and not node.attr.startswith("__"):
            bad.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    return bad


def test_no_private_name_is_used_across_modules():
    trees = _trees()
    tests = {f"tests.{p.stem}": ast.parse(p.read_text(encoding="utf-8"))
             for p in Path(__file__).resolve().parent.rglob("test_*.py")}
    bad = [b for name, tree in trees.items() for b in _private_uses(name, tree)]
    bad += [b for name, tree in tests.items() for b in _private_uses(name, tree)]
    assert bad == []


def test_modules_and_functions_stay_small():
    long_modules = [f"{name}: {n} lines" for name, path in MODULES.items()
                    if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES]
    long_functions = [f"{name}.{node.name}: {node.end_lineno - node.lineno + 1} lines"
                      for name, tree in _trees().items() for node in ast.walk(tree)
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long_modules == [] and long_functions == []


@pytest.mark.integration
@pytest.mark.parametrize("module", ["ptxdiff.gitdiff.driver", "ptxdiff.driver"])
def test_importing_the_diff_driver_loads_no_heavy_library(module):
    """The driver runs at every `git diff`: its warm path is a cheap Python process."""
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert module in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("pygit2", "triton", "torch", "tabulate", "numpy",
                                                           "fsspec", "s3fs", "gcsfs", "aiohttp", "botocore")}


def test_shims_installed_before_the_layout_still_find_the_driver():
    """hooks/diff-driver of an older install imports `ptxdiff.driver.main`."""
    import ptxdiff.driver
    import ptxdiff.gitdiff.driver

    assert ptxdiff.driver.main is ptxdiff.gitdiff.driver.main
