"""Reading a revision never runs it: kernels are built from their effective source.

A hostile branch puts code everywhere a kernel's values come from (module top level, a helper
module, an autotune Config expression, a heuristic, a default); each payload would write a
marker file. Nothing writes it, and the branch's changed kernel is still measured. On the
corpus, building from source gives exactly what importing gives."""

from __future__ import annotations

import itertools
import json
import linecache
import os
import sys
import textwrap
import types
from pathlib import Path

import pytest

from helpers import (
    HEADER,
    add_origin,
    commit,
    git,
    install,
    make_repo,
    ptxdiff,
    rows_by_kernel,
    run_json,
    run_main,
    scale_kernel,
    write,
)
from ptxdiff.compare.engine import Engine
from ptxdiff.corpus import pairs as corpus
from ptxdiff.git.repo import Repo
from ptxdiff.instantiate.builder import NOT_THE_TEXT
from ptxdiff.specs.resolve import SpecError

INTEGRATION = pytest.mark.integration  # the tests that build git repos and compile


def hostile_kernel(marker: str, body: str) -> str:
    """A kernel module with a payload in every place a value could come from."""
    touch = f"open({marker!r}, 'w').write('ran')"
    return HEADER + f'''
import os
from ops import util

{touch}
PAYLOAD = {touch}
EVIL_BLOCK = int(os.system("touch {marker}") or 128)


def _side_effect():
    {touch}
    return 128


@triton.autotune(configs=[triton.Config({{"BLOCK": _side_effect()}}, num_warps=4)], key=["n"])
@triton.heuristics({{"EVEN": lambda args: os.system("touch {marker}") == 0}})
@triton.jit
def hostile_kernel(x_ptr, out_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr, K: tl.constexpr = EVIL_BLOCK):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if EVEN:
        x = x + 1.0
    tl.store(out_ptr + offs, util.twice({body}), mask=mask)
'''


def hostile_util(marker: str) -> str:
    return HEADER + f'''
open({marker!r}, 'w').write('ran')


@triton.jit
def twice(x):
    return x * 2.0
'''


@pytest.fixture
def hostile(tmp_path):
    marker = str(tmp_path / "MARKER")
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": hostile_kernel(marker, "x"),
                                "ops/util.py": hostile_util(marker)})
    git(repo, "checkout", "-q", "-b", "branch")
    commit(repo, "change the kernel", {"ops/k.py": hostile_kernel(marker, "x * 3.0 + x")})
    git(repo, "checkout", "-q", "main")
    return repo, marker


@INTEGRATION
def test_reviewing_a_hostile_branch_runs_none_of_its_code(hostile, capsys):
    repo, marker = hostile
    rc, out, err = run_main(["diff", "-C", str(repo), "main", "branch", "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert not os.path.exists(marker)
    import json
    rows = json.loads(out)["kernels"]
    assert {r["kernel"] for r in rows} == {"ops/k.py::hostile_kernel"}
    assert "structural" in {r["verdict"] for r in rows}, rows
    # what was refused is said, with the expression and its line, and the values are guessed
    notes = " ".join(n for r in rows for n in r["spec_detail"]["notes"])
    assert "os.system" in notes and "ops/k.py:" in notes
    for args in (["diff", "main", "branch", "--check"], ["show", "branch"], ["log", "hostile_kernel", "branch"]):
        proc = ptxdiff([args[0], "-C", str(repo), *args[1:], "-q"], repo, python_flags=["-I"])
        assert proc.returncode in (0, 1), proc.stderr
        assert not os.path.exists(marker), args
    git(repo, "checkout", "-q", "branch")
    proc = ptxdiff(["diff", "main", "-q"], repo, python_flags=["-I"])
    assert proc.returncode in (0, 1), proc.stderr
    assert not os.path.exists(marker)


@INTEGRATION
def test_importing_is_the_users_choice_and_then_it_does_run(hostile, capsys):
    repo, marker = hostile
    rc, out, err = run_main(["diff", "-C", str(repo), "main", "branch", "--import", "-q"], capsys)
    assert os.path.exists(marker)  # the user asked for it: the module's top level ran
    assert "imported" in out


@INTEGRATION
def test_a_symlinked_module_is_link_text_not_a_module(tmp_path, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text(scale_kernel(name="outside_kernel"))
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    os.symlink(outside, repo / "ops" / "linked.py")
    commit(repo, "a link")
    r = Repo(repo)
    report = Engine(r, jobs=1).compare(None, r.side("HEAD"), show_all=True)
    assert {row.kernel for row in report.rows} == {"ops/k.py::scale_kernel"}
    work = Engine(r, jobs=1).compare(None, r.side(None), show_all=True)
    assert {row.kernel for row in work.rows} == {"ops/k.py::scale_kernel"}


@INTEGRATION
def test_compiles_use_a_private_triton_cache(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "v2", {"ops/k.py": scale_kernel("x * 3.0")})
    r = Repo(repo)
    assert Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).compiled == 2
    assert not (tmp_path / "home" / ".triton").exists()


@INTEGRATION
def test_building_from_source_gives_what_importing_gives_on_the_corpus(tmp_path):
    pairs, hermetic = corpus.run([90], jobs=2, workdir=str(tmp_path / "a"))
    _, imported = corpus.run([90], jobs=2, workdir=str(tmp_path / "b"), imports=True)
    # a row per pair at least (a kernel that converts its values also compiles a bf16 spec)
    assert len(hermetic.rows) == len(imported.rows) >= len(pairs)
    for a, b in zip(hermetic.rows, imported.rows):
        assert (a.kernel, a.spec, a.verdict) == (b.kernel, b.spec, b.verdict)
        assert a.error is None and b.error is None, (a.kernel, a.error, b.error)
        assert a.old == b.old and a.new == b.new, a.kernel


@INTEGRATION
def test_every_git_touchpoint_on_a_hostile_branch_runs_none_of_its_code(hostile, tmp_path, capsys):
    """The branch also tries to replace the tool itself (`ptxdiff/__main__.py`, `pygit2.py` at its
    root). git diff shown and piped, git log -p --ext-diff, git show, and a real push through the
    pre-push hook: no marker, and the shown diff measures the changed kernel."""
    repo, marker = hostile
    shadow = f"open({marker!r}, 'w').write('shadowed')\n"
    git(repo, "checkout", "-q", "branch")
    commit(repo, "shadow the tool", {"ptxdiff/__init__.py": shadow, "ptxdiff/__main__.py": shadow, "pygit2.py": shadow,
                                      "tabulate.py": shadow})
    git(repo, "checkout", "-q", "main")
    install(repo, capsys)
    add_origin(repo, tmp_path)
    for checked_out in ("main", "branch"):
        git(repo, "checkout", "-q", checked_out)
        shown = git(repo, "diff", "main..branch", env={"PTXDIFF_FORCE": "1"}).stdout
        assert "ptxdiff sm_90 ops/k.py::hostile_kernel" in shown and " structural" in shown, shown
        piped = git(repo, "diff", "main..branch").stdout
        assert piped == git(repo, "diff", "--no-ext-diff", "main..branch").stdout
        git(repo, "log", "-p", "--ext-diff", "-3", "branch", env={"PTXDIFF_FORCE": "1"})
        git(repo, "show", "--ext-diff", "branch~1", env={"PTXDIFF_FORCE": "1"})
        assert not os.path.exists(marker), checked_out
    push = git(repo, "push", "origin", "branch", check=False)
    assert push.returncode != 0 and "blocked" in push.stderr, push.stderr  # a structural change, measured
    assert not os.path.exists(marker)


# -- the second layer by itself: a hostile kernel text is refused before triton's code generator runs it
def _kernel(marker: Path, first_line: str, params: str = "x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128",
            prelude: str = "") -> str:
    """The scale kernel with one hostile line (which would write `marker`) at the top of its body."""
    touch = f"open({str(marker)!r}, 'w').write('ran')"
    return HEADER + prelude.replace("TOUCH", repr(touch)) + f'''
@triton.jit
def scale_kernel({params.replace("TOUCH", repr(touch))}):
    {first_line.replace("TOUCH", repr(touch))}
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0, mask=mask)
'''


def _decoy(marker: Path) -> str:
    """A plain function above the kernel that reads like the old kernel (and would write the
    marker), and control characters in a comment that `str.splitlines` takes for line ends: a
    builder that splits the module that way makes triton compile the decoy (an `identical`)."""
    touch = f"open({str(marker)!r}, 'w').write('ran')"
    return HEADER + f'''
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    tl.core.builtins.exec({touch!r})
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)

# \x1c\x0c\x1d\x1e\x85\u2028
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0, mask=mask)
'''


HOSTILE_KERNELS = {  # file -> (its text given the marker, what the row's error names)
    "body_exec.py": (lambda m: _kernel(m, "tl.core.builtins.exec(TOUCH)"), "`triton.language.core.builtins`"),
    "dunder_builtins.py": (lambda m: _kernel(m, 'getattr(__builtins__, "exec")(TOUCH)'), "`__builtins__`"),
    "annotation_call.py": (lambda m: _kernel(m, "pass", params="x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128, "
                                              "Z: tl.core.builtins.exec(TOUCH) = 1"), "an annotation must be"),
    "constexpr_exec.py": (lambda m: _kernel(m, "RUN(TOUCH)", prelude="RUN = tl.constexpr(tl.core.builtins.exec)\n"),
                          "`triton.language.core.builtins.exec`"),
    "format_walk.py": (lambda m: _kernel(m, 'tl.static_assert(False, "{0.__globals__}".format(tl.sum))'),
                       "walks attributes"),
}


@INTEGRATION
def test_a_hostile_kernel_text_is_refused_without_the_sandbox(tmp_path):
    """`--no-sandbox`: only the build layer stands between the branch and the reviewer. Each
    payload (in the body, a parameter annotation, a module constant, a static_assert message,
    a decoy above the kernel) would write its marker; none does, each kernel's row fails and
    blocks with what was refused, and the decoy's file is measured on the real kernel."""
    markers = tmp_path / "markers"
    markers.mkdir()
    files = {f"ops/{name}": scale_kernel() for name in [*HOSTILE_KERNELS, "decoy.py"]}
    repo = make_repo(tmp_path, files)
    write(repo, {f"ops/{name}": text(markers / name) for name, (text, _) in HOSTILE_KERNELS.items()})
    write(repo, {"ops/decoy.py": _decoy(markers / "decoy.py")})

    proc = ptxdiff(["diff", "--no-sandbox", "--no-cache", "--format", "json", "-q", "-j", "2"], repo)
    assert sorted(p.name for p in markers.iterdir()) == []
    assert proc.returncode in (0, 1), proc.stderr
    rows = {r["kernel"]: r for r in json.loads(proc.stdout)["kernels"]}
    for name, (_, refused) in HOSTILE_KERNELS.items():
        row = rows[f"ops/{name}::scale_kernel"]
        assert row["verdict"] == "failed" and row["blocking"], (name, row)
        assert refused in row["error"] and f"ops/{name}:" in row["error"], (name, row["error"])
    assert "'__name__': 'triton.language" not in proc.stdout        # the format walk leaked no globals
    decoy = rows["ops/decoy.py::scale_kernel"]
    assert decoy["verdict"] not in ("identical", "failed"), decoy   # x * 2.0 -> x * 3.0, the real kernel's change


# -- the second layer, unit by unit: jit functions built (not compiled) from small modules
def _builder(files: dict[str, str], cc: int = 90, tag: str | None = None):
    from ptxdiff.evaluator.interp import Interp
    from ptxdiff.instantiate.builder import Builder
    from ptxdiff.source.modules import FileSet, ModuleIndex
    from ptxdiff.targets import Device

    snap = FileSet({p: textwrap.dedent(t).encode() for p, t in files.items()})
    return Builder(Interp(ModuleIndex(snap), Device.for_target(cc)), tag or f"t{next(_TAGS)}")


def _built(files: dict[str, str], name: str, path: str = "m.py", builder=None):
    builder = builder or _builder(files)
    return builder.jit(builder.interp.env(path).resolve(name))


_TAGS = itertools.count()
KERNEL_MODULE = """
    import math
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice

    DEFAULT = 64


    @triton.jit
    def k(x_ptr, n: "i32", BLOCK: tl.constexpr = DEFAULT, SCALE: tl.constexpr = math.pi, *,
          EXTRA: tl.constexpr = tl.constexpr(2)) -> tl.tensor:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, libdevice.exp(x) * SCALE + triton.cdiv(n, BLOCK) + math.e, mask=offs < n)
"""


def test_a_kernel_sees_stand_ins_for_triton_and_math_and_no_builtins():
    import triton.language as tl

    jit = _built({"m.py": KERNEL_MODULE}, "k")
    ns = jit.fn.__globals__
    assert ns["__builtins__"] == {}
    modules = {name: v for name, v in ns.items() if isinstance(v, types.ModuleType)}
    assert set(modules) == {"tl", "triton", "math", "libdevice"}
    assert all(sys.modules.get(m.__name__) is not m for m in modules.values())   # stand-ins, not the modules
    assert ns["tl"].load is tl.load and not hasattr(ns["tl"].core, "builtins")
    assert ns["libdevice"].exp is tl.extra.cuda.libdevice.exp
    assert ns["triton"].cdiv is not None and not hasattr(ns["triton"], "runtime")


def test_annotations_and_defaults_are_names_in_the_text_triton_reads():
    """Triton evaluates them from the def's text: each that is not a literal is a name bound to
    the builder's value; a second target's builder reads the same text."""
    import triton.language as tl

    files = {"m.py": KERNEL_MODULE}
    jit = _built(files, "k")
    src, ns = jit.src, jit.fn.__globals__
    for placeholder in ("_ptxdiff_k_annotation_BLOCK", "_ptxdiff_k_default_BLOCK", "_ptxdiff_k_default_SCALE",
                        "_ptxdiff_k_kwdefault_EXTRA", "_ptxdiff_k_annotation_EXTRA", "_ptxdiff_k_return_"):
        assert placeholder in src and placeholder in ns, placeholder
    assert 'n: "i32"' in src and "DEFAULT" not in src and "math.pi" not in src and "tl.tensor" not in src
    assert ns["_ptxdiff_k_annotation_BLOCK"] is tl.constexpr and ns["_ptxdiff_k_default_BLOCK"] == tl.constexpr(64)
    assert ns["_ptxdiff_k_return_"] == tl.constexpr(None)
    tag = jit.fn.__code__.co_filename.rpartition("@")[2]
    assert _built(files, "k", builder=_builder(files, cc=80, tag=tag)).src == src


@pytest.mark.parametrize("annotation", ["tl.core.builtins.exec('1')", "open('x', 'w').write('ran')",
                                        "tl.constexpr[print()]", "(lambda: 1)()", "tl.constexpr | tl.tensor",
                                        "tl.constexpr(print())", "tl.constexpr(tl.int1, x=print())",
                                        "tl.constexpr(tl.int1)(1)"])
def test_an_annotation_other_than_a_name_is_refused(annotation):
    files = {"m.py": f"""
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, Z: {annotation} = 1):
            tl.store(x_ptr, 1.0)
    """}
    with pytest.raises(SpecError, match=r"m\.py:6: refused .*an annotation must be a constant, a name, a dotted"):
        _built(files, "k")


def test_a_constexpr_annotation_in_the_call_form_is_a_constexpr():
    """`X: tl.constexpr(tl.int1)` (unsloth's kernels) is a constexpr, built as the plain form."""
    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, FLAG: tl.constexpr(tl.int1), SCALE: "tl.constexpr" = 2.0):
            tl.store(x_ptr, SCALE if FLAG else 1.0)
    """}
    jit = _built(files, "k")
    assert [p.name for p in jit.params if p.is_constexpr] == ["FLAG", "SCALE"]


def test_a_pointer_type_annotation_is_the_pointer_triton_reads_from_it():
    """`counts: tl.pointer_type(tl.int64)` (torchtitan): triton reads "*i64" from the object; the
    text triton parses names a placeholder, as for any annotation that is not a literal."""
    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(counts: tl.pointer_type(tl.int64), out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(counts + offs).to(tl.float32))
    """}
    jit = _built(files, "k")
    assert [(p.name, p.annotation) for p in jit.params] == [("counts", "*i64"), ("out_ptr", ""), ("BLOCK", "constexpr")]
    assert "pointer_type" not in jit.src


@pytest.mark.parametrize(("line", "refused"), [
    ("tl.core.builtins.exec('1')", "`triton.language.core.builtins`"),
    ("RUN('1')", "RUN`: `triton.language.core.builtins.exec`"),
    ("triton.runtime.driver", "`triton.runtime`"),
    ("getattr(__builtins__, 'exec')", "`__builtins__`"),
    ("tl.sum.get_capture_scope()", "jit-function objects"),
])
def test_a_body_that_reaches_past_the_language_is_refused_before_triton_sees_it(line, refused):
    files = {"m.py": f"""
        import triton
        import triton.language as tl

        RUN = tl.constexpr(tl.core.builtins.exec)

        @triton.jit
        def k(x_ptr):
            {line}
            tl.store(x_ptr, 1.0)
    """}
    with pytest.raises(SpecError, match="m\\.py:9: refused") as e:
        _built(files, "k")
    assert refused in str(e.value)


def test_a_refused_helper_fails_the_kernel_that_calls_it():
    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def helper(x):
            return x.__class__

        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr, helper(1.0))
    """}
    with pytest.raises(SpecError, match=r"m\.py:7: refused `x\.__class__`"):
        _built(files, "k")


def test_a_decoy_above_the_kernel_is_not_the_text_triton_reads():
    """Control characters that `str.splitlines` takes for line ends: the lines are Python's, so
    triton reads the kernel; with lines split the other way, the builder says so."""
    files = {"m.py": """
        import triton
        import triton.language as tl

        def k(x_ptr):
            tl.store(x_ptr, 2.0)

        # \x1c\x0c\x1d\x1e\x85\u2028
        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr, 3.0)
    """}
    assert "3.0" in _built(files, "k").src
    builder = _builder(files)
    text = builder.interp.index.text("m.py")
    linecache.cache[builder.filename("m.py")] = (len(text), None, text.splitlines(keepends=True), "m.py")
    with pytest.raises(SpecError, match=rf"m\.py:10: k: {NOT_THE_TEXT}"):
        _built(files, "k", builder=builder)


def test_a_repository_module_never_takes_a_name_triton_swaps_for_its_own():
    files = {"triton/language/extra/libdevice.py": """
        import triton

        @triton.jit
        def k(x_ptr):
            x_ptr
    """}
    jit = _built(files, "k", path="triton/language/extra/libdevice.py")
    assert jit.fn.__globals__["__name__"] == "triton.language.extra.libdevice (repository)"


def test_a_name_this_triton_lacks_is_left_to_triton_not_refused():
    """`from triton.language.math import tanh` on a triton without it: the kernel builds (a
    branch that never reaches it compiles) and triton's own NameError speaks if one does."""
    files = {"m.py": """
        import triton
        import triton.language as tl
        from triton.language.math import no_such_function

        @triton.jit
        def k(x_ptr, SOFTCAP: tl.constexpr):
            if SOFTCAP:
                no_such_function(1.0)
            tl.store(x_ptr, 1.0)
    """}
    assert "no_such_function" not in _built(files, "k").fn.__globals__


def test_a_builtin_of_the_repository_stays_out_and_says_why():
    """`@builtin` functions of the repository (a fork's ops: `dl.rank()`) are Python triton runs
    while it compiles: never built from source; triton's NameError then carries the reason."""
    files = {"dist/ops.py": """
        from triton.language.core import builtin

        @builtin
        def rank(axis=-1, _semantic=None):
            return _semantic.builder.create_rank(axis)
    """, "m.py": """
        import triton
        import triton.language as tl
        from dist.ops import rank

        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr, rank())
    """}
    builder = _builder(files)
    assert "rank" not in _built(files, "k", builder=builder).fn.__globals__
    said = builder.explain("NameError: rank is not defined")
    assert "a triton builtin of the repository (dist/ops.py)" in said and "never runs" in said


def test_a_function_made_by_the_repository_s_own_decorator_says_why():
    """Triton-distributed's `@_extra_module.dispatch def __syncthreads(): ...` (a proxy that makes a
    triton builtin at import): the NameError names the decorator, never silence."""
    files = {"dist/extra.py": """
        from triton.language import core

        class ModuleProxy:
            def dispatch(self, func):
                @core.builtin
                def wrapper(*args, **kwargs):
                    return func(*args, **kwargs)
                return wrapper

        _extra = ModuleProxy()

        @_extra.dispatch
        def __syncthreads():
            ...
    """, "m.py": """
        import triton
        import triton.language as tl
        from dist.extra import __syncthreads

        @triton.jit
        def k(x_ptr):
            __syncthreads()
            tl.store(x_ptr, 1.0)
    """}
    builder = _builder(files)
    assert "__syncthreads" not in _built(files, "k", builder=builder).fn.__globals__
    said = builder.explain("NameError: __syncthreads is not defined")
    assert "made by a decorator of the repository (dist/extra.py)" in said


def test_a_language_name_triton_renamed_is_read_as_its_new_name():
    """`tl._experimental_make_tensor_descriptor` (triton 3.3) is `tl.make_tensor_descriptor` under a
    triton that renamed it, and the notes say so; other private names stay refused."""
    import triton.language as tl

    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, M, BLOCK: tl.constexpr):
            desc = tl._experimental_make_tensor_descriptor(x_ptr, shape=[M], strides=[1], block_shape=[BLOCK])
            desc.store([0], desc.load([0]) + 1)
    """}
    builder = _builder(files)
    jit = _built(files, "k", builder=builder)
    assert jit.fn.__globals__["tl"]._experimental_make_tensor_descriptor is \
        getattr(tl, "_experimental_make_tensor_descriptor", tl.make_tensor_descriptor)
    if not hasattr(tl, "_experimental_make_tensor_descriptor"):
        assert builder.interp.used == ["`tl._experimental_make_tensor_descriptor` compiled as "
                                       "`make_tensor_descriptor`, its name in this triton"]
    private = {"m.py": files["m.py"].replace("_experimental_make_tensor_descriptor", "_experimental_other")}
    with pytest.raises(SpecError, match="an attribute starting with _"):
        _built(private, "k")


def test_a_language_module_triton_moved_is_read_at_its_new_place():
    """triton 2.x's `tl.libdevice.erf(x)` is `triton.language.extra.libdevice.erf` in 3.x: a kernel
    written for the older triton compiles, and the notes say where the name was read."""
    import triton.language as tl

    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr):
            x = tl.load(x_ptr)
            tl.store(x_ptr, x * 0.5 * (1.0 + tl.libdevice.erf(x * 0.7071067811865476)))
    """}
    builder = _builder(files)
    jit = _built(files, "k", builder=builder)
    moved = jit.fn.__globals__["tl"].libdevice
    assert callable(moved.erf)
    if not hasattr(tl, "libdevice"):
        assert builder.interp.used == ["`tl.libdevice` compiled as `triton.language.extra.libdevice`, "
                                       "its place in this triton"]


def test_triton_2_s_libdevice_functions_of_tl_math_are_read_from_libdevice():
    """triton 2.x's `tl.math` was libdevice (`tl.math.fast_expf`, `tl.math.round`): under a triton
    whose `tl.math` lacks a name, it is read from libdevice and the notes say so."""
    import triton.language as tl

    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr):
            x = tl.load(x_ptr)
            tl.store(x_ptr, tl.math.fast_expf(x) + tl.math.round(x) + tl.math.exp(x))
    """}
    builder = _builder(files)
    jit = _built(files, "k", builder=builder)
    math = jit.fn.__globals__["tl"].math
    assert callable(math.fast_expf) and callable(math.round) and callable(math.exp)
    expected = [f"`tl.math.{n}` compiled as `triton.language.extra.libdevice.{n}`, its place in this triton"
                for n in ("fast_expf", "round") if not hasattr(tl.math, n)]
    assert sorted(builder.interp.used) == sorted(expected)


def test_a_global_the_module_annotates_constexpr_is_annotated_so_in_the_kernel_s_globals():
    """`SCALE: tl.constexpr = 2.0` at module level: triton 3.0 to 3.5 read the global in a kernel as
    a constant because the module's `__annotations__` say constexpr (later tritons refuse it, as they
    would the repository's own import): the kernel's globals carry those annotations, and only those."""
    import triton.language as tl

    files = {"m.py": """
        import triton
        import triton.language as tl

        SCALE: tl.constexpr = 2.0
        OTHER: float = 3.0

        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr, tl.load(x_ptr) * SCALE)
    """}
    jit = _built(files, "k")
    assert jit.fn.__globals__["__annotations__"] == {"SCALE": tl.constexpr}
    plain = {"m.py": files["m.py"].replace("SCALE: tl.constexpr = 2.0", "SCALE = tl.constexpr(2.0)")}
    assert "__annotations__" not in _built(plain, "k").fn.__globals__


PRIVATE_HELPER = {"ops/quant.py": """
    import os
    import triton
    import triton.language as tl

    _os = os
    _SCALE = 2.0

    @triton.jit
    def _to_e8m0(x):
        return x * _SCALE
""", "m.py": """
    import triton
    import triton.language as tl
    from ops import quant as qk

    @triton.jit
    def k(x_ptr):
        LINE
"""}


def test_a_private_helper_of_a_repository_module_is_read_through_its_stand_in():
    """`qk._to_e8m0(x)` (a test calling the module's private helper): the stand-in module holds
    only what the kernel reads and the builder converts, so one underscore is read there (a
    module of Python it holds, `_os`, never reaches it); elsewhere it stays refused."""
    line = "tl.store(x_ptr, qk._to_e8m0(1.0))\n        qk._os.system('touch x')"
    jit = _built({**PRIVATE_HELPER, "m.py": PRIVATE_HELPER["m.py"].replace("LINE", line)}, "k")
    module = jit.fn.__globals__["qk"]
    assert sorted(n for n in vars(module) if not n.startswith("__")) == ["_to_e8m0"]
    assert module._to_e8m0.fn.__globals__["_SCALE"] == 2.0


@pytest.mark.parametrize(("line", "refused"), [
    ("qk.__dict__", "refused `qk.__dict__`: an attribute starting with _"),
    ("tl._semantic", "refused `tl._semantic`: an attribute starting with _"),
    ("qk = tl\n        qk._semantic", "refused `qk._semantic`: an attribute starting with _"),
])
def test_a_private_name_elsewhere_or_a_module_of_python_stays_refused(line, refused):
    files = {**PRIVATE_HELPER, "m.py": PRIVATE_HELPER["m.py"].replace("LINE", line)}
    with pytest.raises(SpecError, match="m\\.py:") as e:
        _built(files, "k")
    assert refused in str(e.value), str(e.value)


def test_the_builder_builds_only_what_the_fingerprint_names():
    """One resolver: the kernel's closure is walked again where it is built; a fingerprint that is
    not the closure's, or a jit function the builder reaches outside the closure, is refused."""
    import dataclasses

    from ptxdiff.discovery.kernels import discover
    from ptxdiff.instantiate.builder import NOT_FINGERPRINTED

    files = {"m.py": HEADER + "\n@triton.jit\ndef h(x):\n    return x * 2.0\n\n\n@triton.jit\ndef other(x):\n"
                     "    return x + 1.0\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, h(tl.load(x_ptr)))\n"}
    builder = _builder(files)
    kernel = discover(builder.interp.index.snapshot).kernels["m.py::k"]
    assert builder.kernel(kernel)[0] is not None
    with pytest.raises(SpecError, match=NOT_FINGERPRINTED):
        _built(files, "other", builder=builder)            # read by no statement of k's closure
    with pytest.raises(SpecError, match=NOT_FINGERPRINTED):
        _builder(files).kernel(dataclasses.replace(kernel, fingerprint="0" * 64))


def test_a_helper_defined_below_the_kernel_is_found():
    """Python reads a kernel's globals when it runs: a jit helper the module defines after the
    kernel is there (flame's `_backward` calls `_backward_one_row`, defined below it)."""
    files = {"m.py": """
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr):
            tl.store(x_ptr, below(1.0))

        @triton.jit
        def below(x):
            return x * 2.0
    """}
    assert "below" in _built(files, "k").fn.__globals__


def test_every_kernel_that_reads_a_global_carries_the_assumptions_behind_it():
    """Two kernels of one module read `tanh`, chosen under an assumption (an optional package
    taken as not installed): both say so, whichever was built first in the process (Liger's dyt
    kernels said it at --jobs 2 and not at --jobs 1)."""
    files = {"m.py": """
        import triton
        import triton.language as tl

        def has_npu():
            try:
                import vendor_npu
                return True
            except ImportError:
                return False

        if not has_npu():
            from triton.language.extra.libdevice import tanh

        @triton.jit
        def fwd(x_ptr):
            tl.store(x_ptr, tanh(tl.load(x_ptr)))

        @triton.jit
        def bwd(x_ptr):
            t = tanh(tl.load(x_ptr))
            tl.store(x_ptr, 1.0 - t * t)
    """}
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.source.modules import FileSet
    kernels = discover(FileSet({p: textwrap.dedent(t).encode() for p, t in files.items()})).kernels
    for order in (("fwd", "bwd"), ("bwd", "fwd")):
        builder = _builder(files)
        notes = {name: builder.kernel(kernels[f"m.py::{name}"])[1].notes for name in order}
        assert all(any("vendor_npu: assumed not installed" in n for n in said) for said in notes.values()), notes


def test_a_device_function_s_values_are_unpacked_in_its_harness():
    """A helper that returns two values is compiled in a harness that unpacks the call (`a, b =
    f(...)`): triton 3.0, the stand-in for a 2024 revision, cannot index the tuple (`result[0]`:
    `unsupported tensor index: constexpr[0]`, applied-ai's `grouped_launch`)."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.source.modules import FileSet

    text = '''
        import triton
        import triton.language as tl


        @triton.jit
        def grouped(pid, m, n, BLOCK_M: tl.constexpr, GROUP_M: tl.constexpr):
            grid_m = tl.cdiv(m, BLOCK_M)
            return pid % (GROUP_M * grid_m), pid // grid_m
    '''
    snap = FileSet({"m.py": textwrap.dedent(text).encode()})
    (kernel,) = discover(snap).kernels.values()
    assert kernel.harness == 2
    jit, declared = _builder({"m.py": text}).kernel(kernel)
    assert "result0, result1 = _device(pid, m, n, BLOCK_M=BLOCK_M, GROUP_M=GROUP_M)" in jit.src
    assert "result[" not in jit.src and any("elementwise harness" in n for n in declared.notes)


def test_a_name_the_module_binds_nowhere_is_the_kernel_s_own_error():
    """gemlite's `127 + eps_exp` in a helper whose parameter is `eps`: triton's NameError is the
    repository's own, and the row says so; a name some statement or star import may bind does not."""
    text = '''
        import triton
        import triton.language as tl
        from helpers import *

        if triton.__version__ > "3":
            LATER = 1


        def host(eps_exp: int = -30):
            eps_exp = eps_exp * 2       # a function's local: no global of the module
            return eps_exp


        @triton.jit
        def k(x_ptr, eps: tl.constexpr):
            tl.store(x_ptr, 127 + eps_exp + LATER + STARRED + max(1, 2))
    '''
    builder = _builder({"m.py": text, "helpers.py": "STARRED = 2\n"})
    kernel = _kernel_of(builder, "m.py::k")
    builder.kernel(kernel)
    assert builder.unbound == {("m.py", "eps_exp")}
    said = builder.explain("compile failed: m.py:18:30: NameError: eps_exp is not defined (at: ...)", kernel.paths)
    assert said.endswith("(eps_exp: bound nowhere in m.py: the kernel's own error, which triton raises at this "
                         "revision too)")
    assert builder.explain("compile failed: NameError: LATER is not defined", kernel.paths) == \
        "compile failed: NameError: LATER is not defined"


@pytest.mark.parametrize("binding", [
    "def setup():\n    global SCALE\n    SCALE = 2\n",
    "if (SCALE := 2):\n    pass\n",
    "with open('x') as SCALE:\n    pass\n",
    "match 1:\n    case SCALE:\n        pass\n",
    "globals().update(SCALE=2)\n",
    "from triton.language.extra.libdevice import *\n",   # a star import from outside the repository
    "try:\n    pass\nexcept ValueError as SCALE:\n    pass\n",
    "for SCALE in range(2):\n    pass\n",
])
def test_a_name_some_statement_may_bind_is_no_kernel_s_own_error(binding):
    text = "import triton\nimport triton.language as tl\n\n" + binding + \
        "\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, SCALE)\n"
    builder = _builder({"m.py": text})
    builder.kernel(_kernel_of(builder, "m.py::k"))
    assert builder.unbound == set()


def test_a_name_another_kernel_s_module_binds_nowhere_is_not_this_kernel_s_error():
    """Which kernels a worker built before (that depends on --jobs) never changes a row's words:
    a.py binds SCALE nowhere; b.py imports it from a package that is not installed."""
    files = {"a.py": "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef ka(x_ptr):\n"
                     "    tl.store(x_ptr, SCALE)\n",
             "b.py": "import triton\nimport triton.language as tl\nfrom some_uninstalled_pkg import SCALE\n\n\n"
                     "@triton.jit\ndef kb(x_ptr):\n    tl.store(x_ptr, SCALE)\n"}
    builder = _builder(files)
    ka, kb = _kernel_of(builder, "a.py::ka"), _kernel_of(builder, "b.py::kb")
    builder.kernel(ka)
    builder.kernel(kb)
    builder.kernel(ka)   # built again: served from what the builder keeps
    assert builder.explain("compile failed: NameError: SCALE is not defined", kb.paths) == \
        "compile failed: NameError: SCALE is not defined"


def _kernel_of(builder, kid: str):
    from ptxdiff.discovery.kernels import discover

    return discover(builder.interp.index.snapshot).kernels[kid]


@pytest.mark.integration
def test_a_default_that_names_a_constant_of_triton_s_compiles_as_its_value(tmp_path, capsys):
    """`DESCENDING: tl.constexpr = core.CONSTEXPR_0` (a bitonic sort's order, passed on to a
    helper that compares with it): before, every spec failed with `cannot convert
    triton.language.core.CONSTEXPR_0 ... to tensor`."""
    source = HEADER + """import triton.language.core as core


@triton.jit
def _order(x, flip):
    return tl.where((x > 0.0) != flip, -x, x)


@triton.jit
def order(x_ptr, n, DESCENDING: tl.constexpr = core.CONSTEXPR_0, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, _order(x, DESCENDING) * VALUE, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"k.py": source.replace("VALUE", "3.0")})
    commit(repo, "value", {"k.py": source.replace("VALUE", "5.0")})
    rows = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::order"]
    assert [r["verdict"] for r in rows] == ["constants-only"] * len(rows), [r.get("error") for r in rows]
    assert "DESCENDING=0" in rows[0]["spec"]


def test_an_enum_with_a_str_base_reaches_a_kernel_as_a_real_enum_of_its_values():
    """`class Act(str, enum.Enum)`: the kernel's global is an enum whose members equal their values
    and have `.value` (Fast-LLM compares a constexpr with both), made from the values the evaluator
    read; a plain Enum's members do not equal their values, as in Python."""
    builder = _builder({"m.py": """
        import enum

        class Act(str, enum.Enum):
            gelu = "gelu"
            relu = "relu"

        class Plain(enum.Enum):
            a = 1
    """})
    env = builder.interp.env("m.py")
    act, plain = builder.convert(env.resolve("Act"), "Act"), builder.convert(env.resolve("Plain"), "Plain")
    assert act.relu == "relu" and act.gelu.value == "gelu" and isinstance(act.gelu, str)
    assert plain.a != 1 and plain.a.value == 1
