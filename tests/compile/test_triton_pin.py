"""Reading the triton a repository targets from its files, and choosing each side's triton."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import RING, SnapshotFiles
from ptxdiff.compile import toolchains, triton_pin
from ptxdiff.errors import UsageError


def pin_of(files: dict[str, str]) -> triton_pin.Pin | None:
    return triton_pin.read_pin(lambda p: files[p].encode(), files)


@pytest.mark.parametrize(("text", "spec"), [
    ("triton==3.3.1", "==3.3.1"),
    ("triton >= 3.2, < 3.4  # the kernels need 3.2", ">=3.2,<3.4"),
    ("triton==3.3.* ; sys_platform == 'linux'", "==3.3.*"),
    ("Triton[tests]~=3.5.0", "~=3.5.0"),
    ("triton", ""),
    ("triton (>=3.1)", ">=3.1"),
    ("tritonparse==0.2", None),
    ("pytorch-triton==3.3.0", None),
    ("triton @ https://example.com/triton-3.3.1.whl", None),
    ("-e git+https://github.com/triton-lang/triton#egg=triton", None),
    ("# triton==3.3.1", None),
])
def test_requirement_lines(text: str, spec: str | None) -> None:
    assert triton_pin.requirement(text) == spec


@pytest.mark.parametrize(("version", "spec", "ok"), [
    ("3.3.1", "==3.3.1", True), ("3.3.0", "==3.3.1", False),
    ("3.3.5", "==3.3.*", True), ("3.4.0", "==3.3.*", False), ("3.4.0", "!=3.3.*", True),
    ("3.3.0", ">=3.2,<3.4", True), ("3.4.0", ">=3.2,<3.4", False),
    ("3.5.1", "~=3.5.0", True), ("3.6.0", "~=3.5.0", False), ("3.9.0", "~=3.5", True),
    ("3.2", "==3.2.0", True), ("3.9.0", ">3.9", False), ("3.9.0", "<=3.9", True),
    ("3.4.0", ">=3.4.0rc1", True), ("3.3.1", ">=3.4.0rc1", False),   # a pre-release orders just below its release
])
def test_satisfies(version: str, spec: str, ok: bool) -> None:
    assert triton_pin.satisfies(version, spec) is ok


def test_best_is_the_newest_release_allowed() -> None:
    assert triton_pin.best(">=3.2,<3.4", toolchains.KNOWN) == "3.3.1"
    assert triton_pin.best("==3.5.*", toolchains.KNOWN) == "3.5.1"
    assert triton_pin.best(">=4", toolchains.KNOWN) is None


def test_requirements_file_pins() -> None:
    pin = pin_of({"requirements.txt": "torch>=2.6\ntriton==3.3.1 \\\n  --hash=sha256:abc\nnumpy\n"})
    assert pin == triton_pin.Pin("==3.3.1", "requirements.txt")
    assert pin is not None and pin.exact == "3.3.1"


def test_requirements_included_with_dash_r() -> None:
    pin = pin_of({"requirements.txt": "-r requirements/base.txt\n", "requirements/base.txt": "triton>=3.2,<3.4\n"})
    assert pin == triton_pin.Pin(">=3.2,<3.4", "requirements/base.txt")


def test_lock_files_beat_ranges() -> None:
    uv = '[[package]]\nname = "torch"\nversion = "2.7.0"\n\n[[package]]\nname = "triton"\nversion = "3.3.0"\n'
    pin = pin_of({"uv.lock": uv, "pyproject.toml": '[project]\ndependencies = ["triton>=3.2"]\n'})
    assert pin == triton_pin.Pin("==3.3.0", "uv.lock")
    pipfile = '{"default": {"triton": {"version": "==3.2.0"}}}'
    assert pin_of({"Pipfile.lock": pipfile}) == triton_pin.Pin("==3.2.0", "Pipfile.lock")


def test_pyproject_dependencies_optional_and_poetry() -> None:
    assert pin_of({"pyproject.toml": '[project]\ndependencies = ["torch"]\n'
                                     '[project.optional-dependencies]\ngpu = ["triton==3.4.0"]\n'}) == \
        triton_pin.Pin("==3.4.0", "pyproject.toml")
    assert pin_of({"pyproject.toml": '[tool.poetry.dependencies]\ntriton = "^3.2"\n'}) == \
        triton_pin.Pin(">=3.2,<4", "pyproject.toml")
    assert pin_of({"pyproject.toml": '[tool.poetry.dependencies]\ntriton = { version = "3.3.1" }\n'}) == \
        triton_pin.Pin("==3.3.1", "pyproject.toml")


def test_setup_py_is_parsed_never_run() -> None:
    setup = ("import os\nos.system('touch /tmp/ran')\nfrom setuptools import setup\n"
             "setup(name='k', install_requires=['torch', 'triton>=3.1,<3.3'])\n")
    assert pin_of({"setup.py": setup}) == triton_pin.Pin(">=3.1,<3.3", "setup.py")
    assert pin_of({"setup.cfg": "[options]\ninstall_requires =\n    triton==3.2.0\n"}) == triton_pin.Pin("==3.2.0", "setup.cfg")


def test_exact_pin_wins_over_an_earlier_range() -> None:
    pin = pin_of({"requirements.txt": "triton>=3.0\n", "pyproject.toml": '[project]\ndependencies = ["triton==3.5.1"]\n'})
    assert pin == triton_pin.Pin("==3.5.1", "pyproject.toml")


@pytest.mark.parametrize("files", [
    {},
    {"requirements.txt": "torch==2.7\n"},
    {"requirements.txt": "triton\n"},                        # any version: no pin
    {"pyproject.toml": "[project\ndependencies = 3"},        # garbage TOML
    {"setup.py": "setup(install_requires=['triton>=3' +"},   # does not parse
    {"uv.lock": "not toml ["},
    {"Pipfile.lock": "{not json"},
    {"docs/notes.txt": "triton==3.3.1"},                     # not a requirements file
])
def test_no_pin(files: dict[str, str]) -> None:
    assert pin_of(files) is None


def test_choose_follows_user_then_pin_then_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    # a range is the newest release that meets it, whatever toolchains this machine holds
    monkeypatch.setattr(toolchains, "listed", lambda: [toolchains.Toolchain("3.2.0", Path("/t/triton-3.2.0"))])
    assert toolchains.choose("3.6.0", "--triton", triton_pin.Pin("==3.3.1", "r.txt"), toolchains.TODAY).version == "3.6.0"
    assert toolchains.choose("installed", "--triton", triton_pin.Pin("==3.3.1", "r.txt"), toolchains.TODAY).version is None
    assert toolchains.choose("3.9.0", "--triton", None, toolchains.TODAY).version is None           # the installed one
    assert toolchains.choose(None, "", triton_pin.Pin("==3.3.1", "r.txt"), toolchains.TODAY).version == "3.3.1"
    assert toolchains.choose(None, "", triton_pin.Pin("==3.3", "r.txt"), toolchains.TODAY).version == "3.3.0"
    assert toolchains.choose(None, "", triton_pin.Pin(">=3.6", "r.txt"), toolchains.TODAY).version is None  # today's: installed
    assert toolchains.choose(None, "", triton_pin.Pin(">=3.2,<3.4", "r.txt"), toolchains.TODAY).version == "3.3.1"
    assert toolchains.choose(None, "", None, toolchains.TODAY).version is None



@pytest.mark.parametrize("spec, version", [
    (">=4", "3.9.0"),                        # above every release ptxdiff compiles with: the newest
    ("==2.3.0", "3.0.0"),                    # below them all: the oldest (never a 2.x install that cannot work)
    ("==2.0.0.dev20221105", "3.0.0"),        # a pre-release pin
    ("==1.0.0", "3.0.0"),
    ("==3.4.5", "3.4.0"),                    # no such release: the newest below it
    ("==3.10.0", "3.9.0"),                   # newer than ptxdiff knows
])
def test_a_pin_outside_the_supported_releases_takes_the_nearest(monkeypatch: pytest.MonkeyPatch, spec: str,
                                                                 version: str) -> None:
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    chosen = toolchains.choose(None, "", triton_pin.Pin(spec, "requirements.txt"), toolchains.TODAY)
    assert chosen.version == version and f"requirements.txt: triton{spec} is outside" in chosen.why
    assert "\n" not in (toolchains.note(None, chosen) or "")



def test_the_gate_takes_the_base_sides_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    base, branch = triton_pin.Pin("==3.6.0", "requirements.txt"), triton_pin.Pin("==3.3.1", "requirements.txt")
    old, new = toolchains.for_sides(toolchains.Policy(gate=True), base, branch, toolchains.TODAY, toolchains.TODAY)
    assert old is not None and (old.version, new.version) == ("3.6.0", "3.6.0")
    old, new = toolchains.for_sides(toolchains.Policy(), base, branch, toolchains.TODAY, toolchains.TODAY)
    assert old is not None and (old.version, new.version) == ("3.6.0", "3.3.1")


def test_option_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert toolchains.parse_option("3.6.0..3.9") == toolchains.Asked("3.6.0", "3.9.0", "--triton")
    assert toolchains.parse_option("3.6") == toolchains.Asked("3.6.0", "3.6.0", "--triton")
    monkeypatch.setenv("PTXDIFF_TRITON", "3.5.1")
    assert toolchains.asked(None, "3.4.0") == toolchains.Asked("3.5.1", "3.5.1", "PTXDIFF_TRITON")
    assert toolchains.asked("installed", None) == toolchains.Asked("installed", "installed", "--triton")
    monkeypatch.delenv("PTXDIFF_TRITON")
    assert toolchains.asked(None, "3.4.0").said_by == "ptxdiff.triton"
    for bad in ("3.6.0rc1", "latest", "3..", "..3.9", "https://x/triton.whl", "3.6.0.1"):
        with pytest.raises(UsageError):
            toolchains.parse_option(bad)


BLOCK_PTR = "p = tl.make_block_ptr(x, (M, K), (K, 1), (0, 0), (16, 16), (1, 0))\n"


def test_block_pointers_in_a_changed_file_cap_the_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton 3.9 removed block pointers: a diff whose changed files use them compiles with the
    newest release below 3.9 that the pin allows; an exact pin, or block pointers only in files
    the diff does not touch, change nothing."""
    from ptxdiff.git.repo import Side
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    monkeypatch.setattr(toolchains, "listed", lambda: [])
    installed: list[str] = []
    monkeypatch.setattr(toolchains, "install", lambda v, progress=None: installed.append(v))

    def sides(old_files: dict[str, str], new_files: dict[str, str],
              gate: bool = False) -> tuple[str | None, str | None, str | None]:
        old, new, note = toolchains.apply(toolchains.Policy(gate=gate), Side("a", "a" * 40), Side("b", "b" * 40),
                                          SnapshotFiles(old_files), SnapshotFiles(new_files))  # type: ignore[arg-type]
        assert old is not None
        return old.toolchain, new.toolchain, note

    pyproject = '[project]\ndependencies = ["triton>=3.0"]\n'
    old = {"pyproject.toml": pyproject, "ops/k.py": BLOCK_PTR, "ops/other.py": BLOCK_PTR}
    new = {**old, "ops/k.py": BLOCK_PTR + "q = 1\n"}
    o, n, note = sides(old, new)
    assert (o, n) == ("3.8.0", "3.8.0") and installed == ["3.8.0"]
    assert note is not None and "ops/k.py uses block pointers" in note and "triton>=3.0,<3.9" in note
    assert sides(old, {**old, "ops/new.py": "x = 1\n"})[:2] == (None, None)     # block pointers only elsewhere
    exact = {**old, "requirements.txt": "triton==3.9.0\n"}
    assert sides(exact, {**exact, "ops/k.py": "q = 1\n"})[:2] == (None, None)   # the repository says which
    unpinned = {"ops/k.py": "q = 1\n"}
    assert sides(unpinned, {"ops/k.py": BLOCK_PTR})[:2] == ("3.8.0", "3.8.0")
    # the gate reads the base's text alone: a branch cannot choose its compiler by what it writes
    assert sides(unpinned, {"ops/k.py": BLOCK_PTR}, gate=True)[:2] == (None, None)
    assert sides({"ops/k.py": BLOCK_PTR}, unpinned, gate=True)[:2] == ("3.8.0", "3.8.0")


def test_written_for_reads_calls_not_mentions() -> None:
    assert triton_pin.written_for([("a.py", b"# we no longer use make_block_ptr\n")]) == triton_pin.Written()
    found = triton_pin.written_for([("a.py", b"x = 1\n"), ("b.py", BLOCK_PTR.encode())])
    assert found == triton_pin.Written(None, triton_pin.Use("3.9", "block pointers (`tl.make_block_ptr`)", "b.py"))
    assert triton_pin.capped(triton_pin.Pin("==3.3.1", "r.txt"), found) == triton_pin.Pin("==3.3.1", "r.txt")
    assert triton_pin.capped(None, found) == triton_pin.Pin(
        "<3.9", "b.py uses block pointers (`tl.make_block_ptr`), gone in triton 3.9")


@pytest.mark.parametrize("text, bounded", [
    (b"a = tl.flip(tl.cumsum(tl.flip(x), axis=0)) + i\n", True),    # mlstm_kernels before its fix
    (b"a = tl.flip(x[:, None])\n", True),
    (b"a = tl.flip(x, dim=0)\nb = tl.flip(y, 1)\nc = torch.flip(z)\n", False),
])
def test_flip_without_dim_was_written_for_a_triton_before_3_4(text: bytes, bounded: bool) -> None:
    """Through 3.3 `tl.flip(x)` flipped the last dimension; 3.4 and later fail their own
    `static_assert(-len(x.shape) <= dim ...)` on `dim=None` (a TypeError, no line of the kernel)."""
    ceiling = triton_pin.written_for([("k.py", text)]).ceiling
    assert (ceiling is not None and ceiling.release == "3.4") is bounded


def test_the_earliest_removal_bounds_the_pin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    monkeypatch.setattr(toolchains, "listed", lambda: [])
    files = [("a.py", BLOCK_PTR.encode()), ("b.py", b"tl._experimental_descriptor_store(desc, acc, [0, 0])\n")]
    found = triton_pin.written_for(files).ceiling
    assert found is not None and (found.release, found.path) == ("3.4", "b.py")
    pin = triton_pin.capped(triton_pin.Pin(">=3.0", "setup.py"), triton_pin.Written(None, found))
    assert toolchains.choose(None, "", pin, toolchains.TODAY).version == "3.3.1"


MARCH_2025 = toolchains.Dated("ee32bff826", 1741042082)   # triton 3.2.0 was the newest release then


@pytest.mark.parametrize("text, chosen", [
    # a copy of triton's tutorial from before 3.3: the API came with 3.3 and went with 3.4
    (b"desc = tl._experimental_make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[B, B])\n",
     "3.3.1"),
    (b"desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[B, B])\n", "3.9.0"),
    (b"x = triton.language.gather(src, idx, axis=0)\n", "3.9.0"),
    (b"acc = tl.dot_scaled(a, sa, 'e4m3', b, sb, 'e4m3', acc)\n", None),   # 3.2 had it: the date's stands
    (b"v, i = torch.topk(x, 4)\nw = x.topk(2)\n", None),                  # torch's, not triton's
    (b"from triton.experimental import gluon\n", "3.9.0"),                 # Gluon came with 3.4
    # an API that came with 3.4 beside one that went with it: the older one says 3.3 still runs it
    (b"tl._experimental_descriptor_load(d, [0, 0], [B, B], tl.float16)\nd = tl.make_tensor_descriptor(p)\n",
     None),
    # ... and an arrival below that removal still bounds it from below: 3.3's experimental descriptor
    (b"d = tl._experimental_make_tensor_descriptor(p)\ne = tl.make_tensor_descriptor(p)\n", "3.3.1"),
    (b"#   tl.map_elementwise(f, x)\nx = 1\n", None),                   # a comment names it: no use
    # warp-specialised tasks: in 3.4.0 to 3.5.1 only (tritonbench's July 2025 attention kernels)
    (b"with tl.async_task([0]):\n    q = tl.load(q_ptr)\n", "3.5.1"),
    # `tl.constexpr_function` was 3.4's name alone (Triton-distributed's `log2`); 3.5 on: `triton.`'s
    (b"@tl.constexpr_function\ndef log2(n):\n    return len(bin(n)) - 3\n", "3.4.0"),
    (b"@triton.constexpr_function\ndef log2(n):\n    return len(bin(n)) - 3\n", None),
    # Blackwell's PTX in inline assembly: 3.3's ptxas (CUDA 12.4) does not know it (quantized-training's
    # NVFP4 kernel); torch's and Python's names alike are no PTX
    (b'y = tl.inline_asm_elementwise(asm="cvt.rn.satfinite.e2m1x2.f32 b0, $2, $1;", constraints="=r,r,r")\n',
     "3.9.0"),
    (b"q = x.view(torch.float4_e2m1fn_x2)\nf4_e2m1x2 = fp32_to_fp4e2m1x2(x)\n", None),
])
def test_what_a_release_brought_bounds_the_pin_from_below(monkeypatch: pytest.MonkeyPatch, text: bytes,
                                                          chosen: str | None) -> None:
    """A commit written against triton's main compiles with a release that has what it calls,
    chosen as pip chooses within a range (the newest it allows), never the older one of its date."""
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.8.0")
    pin = triton_pin.capped(None, triton_pin.written_for([("ops/k.py", text)]))
    picked = toolchains.choose(None, "", pin, MARCH_2025)
    assert picked.version == (chosen or "3.2.0")
    if chosen:
        assert "ops/k.py uses" in picked.why and "new in triton" in picked.why


@pytest.mark.parametrize("text, release", [
    (b"asm_str: tl.constexpr = _generate_asm(1)\n", "3.3"),          # flame's softplus: a kernel reads it
    (b"NUM: triton.language.constexpr = 1\n", "3.3"),
    (b"class C:\n    N: tl.constexpr = 1\n", None),                   # a class body's: not a module global
    (b"def k(N: tl.constexpr = 1):\n    pass\n", None),                # a parameter's
    (b"N = tl.constexpr(1)\n", None),                                 # a constexpr object: every triton reads it
    (b"_MODE: tl.constexpr = tl.constexpr(-1)\n", None),              # annotated too (Liger): still one
])
def test_module_globals_annotated_constexpr_were_read_until_3_3(text: bytes, release: str | None) -> None:
    found = triton_pin.written_for([("ops/softplus.py", text)]).ceiling
    assert (found.release if found else None) == release


@pytest.mark.parametrize("spec, meets", [
    (">=1.0.1dev", ["3.0.0", "3.2.0", "3.9.0"]),   # lucidrains' setup.py: every release is above it
    (">=3.2rc1", ["3.2.0", "3.9.0"]),
    ("<3.2.0.dev0", ["3.0.0"]),
    ("==2.0.0.dev20221105", []),                 # a pre-release itself: no release is it
    ("!=3.2.0a1", ["3.0.0", "3.2.0", "3.9.0"]),
])
def test_a_pre_release_bound_orders_just_below_its_release(spec: str, meets: list[str]) -> None:
    assert [v for v in ("3.0.0", "3.2.0", "3.9.0") if triton_pin.satisfies(v, spec)] == meets




@pytest.mark.parametrize("files, chosen", [
    ({"ops/ring.py": RING.format(jit_import="", jit="triton.jit")}, "3.4.0"),
    ({"ops/ring.py": RING.format(jit_import="", jit="triton.jit").replace(
        "self.phase = tl.where", "self.phase |= tl.where")}, "3.4.0"),
    # the repository's own decorator, spelled however it likes: the resolver says it jits
    ({"ops/myjit.py": "import triton\n\ndef my_jit(fn):\n    return triton.jit(fn)\n",
      "ops/ring.py": RING.format(jit_import="from ops.myjit import my_jit as J", jit="J")}, "3.4.0"),
    # a host class's constructor, and a CuTe DSL method, assign attributes: no jit function does
    ({"ops/ring.py": "import triton\n\nclass Host:\n    def __init__(self, n):\n        self.n = n\n\n"
      "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, 1)\n"}, None),
    ({"ops/gemm.py": "import cutlass.cute as cute\nimport triton\n\nclass G:\n    @cute.jit\n"
      "    def __call__(self, a):\n        self.a_dtype = a.element_type\n"}, None),
])
def test_attribute_assignment_in_a_jit_function_was_written_for_triton_3_4(
        monkeypatch: pytest.MonkeyPatch, files: dict[str, str], chosen: str | None) -> None:
    """Triton 3.4's code generator set an attribute a jit function assigns (a jit method of an
    `@aggregate` advancing `self.phase`, Triton-distributed's pipeline state); 3.5 and later raise
    "Attribute assignment is not supported in triton", and 3.3 asserted a name: a diff whose
    changed files do it compiles with 3.4, whatever the commit's date chose."""
    from ptxdiff.git.repo import Side
    monkeypatch.setattr(toolchains, "triton_version", lambda: "3.9.0")
    monkeypatch.setattr(toolchains, "listed", lambda: [])
    monkeypatch.setattr(toolchains, "install", lambda v, progress=None: None)
    old_files = {p: t + "# old\n" for p, t in files.items()}
    old, new, note = toolchains.apply(toolchains.Policy(), Side("a", "a" * 40), Side("b", "b" * 40),
                                      SnapshotFiles(old_files), SnapshotFiles(files))  # type: ignore[arg-type]
    assert old is not None and (old.toolchain, new.toolchain) == (chosen, chosen)
    if chosen:
        assert note is not None and "uses attribute assignment in a jit function" in note
