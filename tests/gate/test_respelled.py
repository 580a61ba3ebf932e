"""The gate cannot be walked around by spelling `triton.jit` another way (issue 41): the same body
change under `J = triton.jit`, `from triton import jit as J`, `k = triton.jit(_k)` reads
`structural` through `ptxdiff diff` and is blocked by the real pre-push hook, each with a control
(a change that is no change of the code passes); a kernel whose function is still defined is
never `removed`. And every way of reaching a kernel (issue 37) compiles end to end."""

from __future__ import annotations

import json

import pytest

from helpers import HEADER, commit, git, make_repo, pushed_repo, run_main

pytestmark = pytest.mark.integration

BODY = '''(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, {expr}, mask=offs < n)
'''

SPELLINGS = {
    "alias": ("J = triton.jit\n\n\n@J\ndef k" + BODY, "ops/k.py::k"),
    "import-as": ("from triton import jit as J\n\n\n@J\ndef k" + BODY, "ops/k.py::k"),
    "call-form": ("\ndef _k" + BODY + "\n\nk = triton.jit(_k)\n", "ops/k.py::k"),
}


def check(repo, capsys) -> tuple[int, dict]:
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "HEAD~1", "HEAD"], capsys)
    assert rc in (0, 1), err
    return rc, json.loads(out)


def verdicts(report: dict, kernel: str) -> set[str]:
    return {r["verdict"] for r in report["kernels"] if r["kernel"] == kernel}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_respelled_jit_change_is_structural_and_blocked(tmp_path, capsys, spelling: str) -> None:
    text, kid = SPELLINGS[spelling]
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": HEADER + text.format(expr="x * 2.0")})
    # control: a comment above the kernel is no change of the code: nothing blocks, the push goes
    commit(repo, "comment", {"ops/k.py": "# a comment\n" + HEADER + text.format(expr="x * 2.0")})
    rc, report = check(repo, capsys)
    assert rc == 0 and not report["kernels"], report["kernels"]
    assert git(repo, "push", "-q", "origin", "main", check=False).returncode == 0
    # the change: the same body change a plain @triton.jit kernel is blocked for
    commit(repo, "change", {"ops/k.py": "# a comment\n" + HEADER + text.format(expr="tl.exp(x) * 2.0")})
    rc, report = check(repo, capsys)
    assert rc == 1 and verdicts(report, kid) == {"structural"}, report["kernels"]
    push = git(repo, "push", "-q", "origin", "main", check=False)
    assert push.returncode != 0 and "structural" in push.stderr, push.stderr


def test_a_kernel_still_defined_is_never_removed(tmp_path, capsys) -> None:
    plain = HEADER + "\n@triton.jit\ndef k" + BODY.format(expr="x * 2.0")
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": plain})
    # respelled through a decorator ptxdiff cannot follow: the function is still there
    hidden = HEADER + "import mystery\n\n\n@mystery.compile\ndef k" + BODY.format(expr="tl.exp(x) * 2.0")
    commit(repo, "respell", {"ops/k.py": hidden})
    rc, report = check(repo, capsys)
    rows = [r for r in report["kernels"] if r["kernel"] == "ops/k.py::k"]
    assert rc == 1 and rows and all(r["verdict"] == "failed" and r["blocking"] for r in rows), report["kernels"]
    assert "not a jit function ptxdiff can resolve" in rows[0]["error"]
    push = git(repo, "push", "-q", "origin", "main", check=False)
    assert push.returncode != 0, push.stderr
    # moved under another binding (`k = triton.jit(_k)`): the same function, compared, not removed
    commit(repo, "call form", {"ops/k.py": HEADER + "\ndef _k" + BODY.format(expr="x * 2.0") + "\n\nk = triton.jit(_k)\n"})
    rc, report = check(repo, capsys)
    assert "removed" not in {r["verdict"] for r in report["kernels"]}, report["kernels"]


def test_a_kernel_that_hides_every_language_call_is_still_not_removed(tmp_path, capsys) -> None:
    plain = HEADER + "\n@triton.jit\ndef k" + BODY.format(expr="x * 2.0")
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": plain})
    hidden = ("import mystery\nfrom triton.language import load as L, store as S, arange as A, program_id as P\n\n\n"
              "@mystery.compile\ndef k(x_ptr, out_ptr, n, BLOCK=128):\n    offs = P(0) * BLOCK + A(0, BLOCK)\n"
              "    S(out_ptr + offs, L(x_ptr + offs) * 3.0)\n")
    commit(repo, "hide", {"ops/k.py": hidden})
    rc, report = check(repo, capsys)
    rows = [r for r in report["kernels"] if r["kernel"] == "ops/k.py::k"]
    assert rc == 1 and rows and {r["verdict"] for r in rows} == {"failed"}, report["kernels"]
    assert "still defined" in rows[0]["error"] or "not a jit function" in rows[0]["error"], rows[0]["error"]
    assert git(repo, "push", "-q", "origin", "main", check=False).returncode != 0


def test_a_respelled_kernel_in_a_file_that_no_longer_parses_is_not_removed(tmp_path, capsys) -> None:
    text, _ = SPELLINGS["alias"]
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": HEADER + text.format(expr="x * 2.0")})
    commit(repo, "break", {"ops/k.py": HEADER + text.format(expr="tl.exp(x) * 2.0") + "\ndef (\n"})
    rc, report = check(repo, capsys)
    rows = [r for r in report["kernels"] if r["kernel"] == "ops/k.py::k"]
    assert rc == 1 and rows and {r["verdict"] for r in rows} == {"failed"}, report["kernels"]


def test_control_a_deleted_kernel_is_removed(tmp_path, capsys) -> None:
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": HEADER + "\n@triton.jit\ndef k" + BODY.format(expr="x * 2.0"),
                                              "ops/other.py": HEADER})
    commit(repo, "delete", {"ops/k.py": HEADER + "\n\ndef host():\n    return 1\n"})
    rc, report = check(repo, capsys)
    assert verdicts(report, "ops/k.py::k") == {"removed"} and rc == 0, report["kernels"]


EVERY_CLASS = {
    "pkg/__init__.py": HEADER + "from .deco import triton_jit, my_jit\n\n\n@triton_jit()\ndef k_factory"
    + BODY.replace("{expr}", "_h({expr})[0]")
    + "\n\n@my_jit\ndef _h(x) -> tuple[tl.tensor, tl.tensor]:\n    return x * 2.0, x\n",
    "pkg/deco.py": HEADER + "\n\ndef triton_jit(**kw):\n    return triton.jit(**kw)\n\n\ndef my_jit(fn):\n"
                            "    return triton.jit(fn)\n",
    "pkg/calls.py": HEADER + "\n\ndef _k" + BODY + "\n\nk_call = triton.jit(_k)\n\n\ndef _k2" + BODY
    + "\n\ntry:\n    k_auto = triton.autotune(configs=[triton.Config({'BLOCK': 64}, num_warps=2)], key=['n'])"
      "(triton.jit(_k2))\nexcept ImportError:\n    k_auto = None\n",
    "pkg/cls.py": HEADER + "\n\nclass Ops:\n    @staticmethod\n    @triton.jit\n    def k_static"
    + BODY.replace("\n    ", "\n        ") + "\n    def _f" + BODY.replace("\n    ", "\n        ")
    + "\n    k_attr = triton.jit(_f)\n\n\ndef launch(x, out):\n    @triton.jit\n    def k_inner"
    + BODY.replace("\n    ", "\n        ") + "\n    k_inner[(1,)](x, out, x.numel())\n",
    "pkg/lib.py": HEADER + "\n\nclass Lib:\n    @staticmethod\n    @triton.jit\n    def thrice(x):\n        return x * 3.0\n",
    "pkg/helped.py": HEADER + "from pkg import lib\n\n\nclass Ops:\n    @staticmethod\n    @triton.jit\n    def _twice(x):\n"
                              "        return x * 2.0\n\n    @staticmethod\n    @triton.jit\n    def k_helped"
    + BODY.replace("\n    ", "\n        ").replace("{expr}", "Ops._twice(lib.Lib.thrice({expr}))"),
}
EVERY_KERNEL = {"pkg/__init__.py::k_factory", "pkg/calls.py::k_call", "pkg/calls.py::k_auto",
                "pkg/cls.py::Ops.k_static", "pkg/cls.py::Ops.k_attr", "pkg/cls.py::launch.k_inner",
                "pkg/helped.py::Ops.k_helped"}


def test_every_spelling_compiles_and_reads_structural(tmp_path, capsys) -> None:
    old = {p: t.replace("{expr}", "x * 2.0") for p, t in EVERY_CLASS.items()}
    repo = make_repo(tmp_path, old)
    commit(repo, "change", {p: t.replace("x * 2.0, mask", "tl.exp(x) * 2.0, mask").replace("(x * 2.0)", "(tl.exp(x) * 2.0)")
                            for p, t in old.items()})
    rc, report = check(repo, capsys)
    assert {r["kernel"] for r in report["kernels"]} == EVERY_KERNEL, report["kernels"]
    assert {r["verdict"] for r in report["kernels"]} == {"structural"}, report["kernels"]
    assert rc == 1


def test_another_backend_is_a_line_and_gluon_is_compiled(tmp_path, capsys) -> None:
    """An Ascend kernel is one line, never a failed row; a Gluon kernel (`@gluon.jit`, explicit
    layouts, a `@gluon.constexpr_function` helper) is compiled with Gluon's front end and compared
    as any other: its change blocks the push like a Triton kernel's."""
    ascend = HEADER + "\n@triton.jit\ndef npu_k" + BODY
    gluon = """from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.constexpr_function
def warps_split(BT, NW):
    return [min(BT, NW), NW // min(BT, NW)]


@gluon.jit
def gk(x_ptr, out_ptr, n, scale, BT: gl.constexpr, BD: gl.constexpr, NW: gl.constexpr):
    blk: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], warps_split(BT, NW), [1, 0])
    t = gl.program_id(0) * BT + gl.arange(0, BT, layout=gl.SliceLayout(1, blk))
    offs = t[:, None] * BD + gl.arange(0, BD, layout=gl.SliceLayout(0, blk))[None, :]
    x = gl.load(x_ptr + offs, mask=offs < n, other=0.0)
    gl.store(out_ptr + offs, x {op} scale, mask=offs < n)


def launch(x, out, scale):
    gk[(1,)](x, out, x.numel(), scale, BT=16, BD=128, NW=4, num_warps=4)
"""
    repo = make_repo(tmp_path, {"backends/triton_ascend/k.py": ascend.format(expr="tl.extra.ascend.f(x)"),
                                "ops/g.py": gluon.format(op="+")})
    commit(repo, "change", {"backends/triton_ascend/k.py": ascend.format(expr="tl.extra.ascend.g(x)"),
                            "ops/g.py": gluon.format(op="*")})
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "HEAD~1", "HEAD"], capsys)
    report = json.loads(out)
    assert any("Ascend (NPU) kernel: not compiled" in m for m in report["messages"]), report["messages"]
    (row,) = report["kernels"]
    assert row["kernel"] == "ops/g.py::gk" and row["error"] is None and row["verdict"] == "structural", row
    assert row["spec_detail"]["constexprs"] == {"BT": 16, "BD": 128, "NW": 4} and rc == 1


def test_a_kernel_written_for_the_repository_s_own_triton_fork_is_a_line_not_a_failed_row(tmp_path, capsys) -> None:
    """A repository that builds its own triton (a submodule that is not triton's) and a kernel that
    calls a builtin it defines over that triton: no release compiles it, so the diff says so in a
    line; its plain kernel beside it is compiled and compared as any other."""
    gitmodules = '[submodule "3rdparty/triton"]\n\tpath = 3rdparty/triton\n\turl = https://github.com/example/fork.git\n'
    lang = ("from triton.language import core\nfrom triton.language.core import builtin\n"
            "from triton._C.libtriton.distributed import ir\n\n\n@builtin\n"
            "def rank(axis=-1, _semantic=None):\n    return core.tensor(_semantic.builder.create_get_rank(axis), core.int32)\n")
    ops = HEADER + ("from pkg.lang import rank\n\n\n@triton.jit\ndef ranked(x_ptr):\n    tl.store(x_ptr, rank() {op} 1)\n"
                    "\n\n@triton.jit\ndef k" + BODY.replace("{expr}", "x {op} 2.0"))
    repo = make_repo(tmp_path, {".gitmodules": gitmodules, "pkg/__init__.py": "", "pkg/lang.py": lang,
                                "pkg/ops.py": ops.format(op="+")})
    commit(repo, "change", {"pkg/ops.py": ops.format(op="*")})
    rc, out, err = run_main(["-C", str(repo), "diff", "--format", "json", "HEAD~1", "HEAD"], capsys)
    report = json.loads(out)
    assert [(r["kernel"], r["verdict"]) for r in report["kernels"]] == [("pkg/ops.py::k", "structural")], out
    assert any(m.startswith("pkg/ops.py::ranked: Triton fork kernel: not compiled (written for the repository's "
                            "own triton (3rdparty/triton: https://github.com/example/fork.git)") for m in report["messages"])

    # a branch that declares the fork itself (the base does not): compiled as any change, so the
    # builtin it cannot build fails and blocks, never a line the gate does not read
    plain = make_repo(tmp_path / "plain", {"pkg/__init__.py": "", "pkg/lang.py": lang, "pkg/ops.py": ops.format(op="+")})
    added = ops.format(op="-").replace("def ranked", "def ranked_too").replace("def k(", "def k_too(")
    commit(plain, "claim a fork", {".gitmodules": gitmodules, "pkg/ops.py": ops.format(op="*"), "pkg/more.py": added})
    rc, out, err = run_main(["-C", str(plain), "diff", "--format", "json", "HEAD~1", "HEAD"], capsys)
    report = json.loads(out)
    rows = {r["kernel"]: r for r in report["kernels"]}
    assert rows["pkg/ops.py::ranked"]["verdict"] == "unmeasured" and rows["pkg/ops.py::ranked"]["blocking"], out
    assert "a triton builtin of the repository" in rows["pkg/ops.py::ranked"]["error"]
    # a kernel the branch adds over the fork it declares is a row too, never a line
    assert "pkg/more.py::ranked_too" in rows and not any("Triton fork" in m for m in report["messages"])


@pytest.mark.integration
def test_a_kernel_whose_configs_pass_amd_compile_options_is_a_line_not_a_failed_row(tmp_path, capsys) -> None:
    """`triton.Config({"BLOCK": 64, "waves_per_eu": 2})` (flash-attention's ROCm kernels, plain
    triton in an `amd` folder): triton's NVIDIA backend refuses the option at the first launch, so
    the kernel is AMD's; before, each row failed with "names ['waves_per_eu'], which the kernel has
    no parameter for". A kernel beside it whose configs are NVIDIA's still gets its row."""
    source = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": 64, OPTION}, num_warps=4)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * VALUE, mask=offs < n)
"""
    amd = source.replace("OPTION", '"waves_per_eu": 2')
    plain = source.replace(", OPTION", "")
    repo = make_repo(tmp_path, {"amd/k.py": amd.replace("VALUE", "3.0"), "ops/k.py": plain.replace("VALUE", "3.0")})
    commit(repo, "change", {"amd/k.py": amd.replace("VALUE", "5.0"), "ops/k.py": plain.replace("VALUE", "5.0")})
    rc, out, err = run_main(["-C", str(repo), "diff", "--format", "json", "HEAD~1", "HEAD"], capsys)
    report = json.loads(out)
    assert "amd/k.py::k: ROCm (AMD) kernel: not compiled (its autotune configs pass waves_per_eu, ROCm (AMD)'s " \
           "compile option, which triton refuses on NVIDIA at launch)" in report["messages"], report["messages"]
    (row,) = report["kernels"]
    assert row["kernel"] == "ops/k.py::k" and row["error"] is None and row["verdict"] == "constants-only", row


@pytest.mark.integration
def test_a_branch_that_adds_amd_options_to_an_nvidia_kernel_is_blocked_not_waved_through(tmp_path, capsys) -> None:
    """Adding `waves_per_eu` to an NVIDIA kernel's configs (with a change to its body beside it)
    breaks its launch on NVIDIA: before, the kernel read as AMD's from that one side, the report
    said "no Triton kernel changed" and the push went through. Only where every side says so is
    a kernel another backend's line."""
    source = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": 64OPTION}, num_warps=4)], key=["n"])
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * VALUE, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": source.replace("OPTION", "").replace("VALUE", "2.0")})
    commit(repo, "tune", {"ops/k.py": source.replace("OPTION", ', "waves_per_eu": 2').replace("VALUE", "3.0")})
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "HEAD~1", "HEAD"], capsys)
    report = json.loads(out)
    (row,) = report["kernels"]
    assert row["kernel"] == "ops/k.py::k" and row["verdict"] == "failed" and row["blocking"], row
    assert "waves_per_eu" in row["error"] and rc == 1
    assert not any("ROCm (AMD) kernel" in m for m in report["messages"]), report["messages"]
