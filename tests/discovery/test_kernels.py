"""discover.py on an in-memory snapshot: kernels, helpers, effective-source fingerprints, breakage,
parameter type inference. Nothing is imported or compiled."""

from __future__ import annotations

import ast
import hashlib
import textwrap

import pytest

from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.kernels import Broken, discover, kernel_names_in
from ptxdiff.discovery.params import Param, infer_param_kinds


class FakeSnapshot:
    """What discover needs of git.Snapshot: paths, read, `in`, content_id."""

    def __init__(self, files: dict[str, str | bytes]):
        self.files = {p: (t.encode() if isinstance(t, str) else t) for p, t in files.items()}

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self.files)

    def __contains__(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> bytes:
        return self.files[path]

    def content_id(self, path: str) -> str:
        return hashlib.sha1(self.files[path]).hexdigest()


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


HELPERS = src('''
    import triton
    import triton.language as tl


    @triton.jit
    def h(x):
        return x * 2.0


    @triton.jit
    def unused(x):
        return x + 1.0
''')

KERNELS = src('''
    import triton
    import triton.language as tl

    SCALE = 0.5
    WRAPPER_BLOCK = 1024


    @triton.jit
    def _local_helper(x):
        return x * SCALE


    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, _local_helper(x), mask=mask)


    @triton.jit
    def plain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


    def scale(x, out):
        n = x.numel()
        scale_kernel[(triton.cdiv(n, WRAPPER_BLOCK),)](x, out, n, BLOCK=WRAPPER_BLOCK)
''')

REL = src('''
    import triton
    import triton.language as tl
    from .helpers import h


    @triton.jit
    def rel_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, h(x), mask=offs < n)
''')

ABS = REL.replace("from .helpers import h", "from pkg.helpers import h").replace("rel_kernel", "abs_kernel")

MOD = src('''
    import triton
    import triton.language as tl
    import pkg.helpers as H


    @triton.jit
    def mod_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        tl.store(x_ptr + offs, H.h(x), mask=offs < n)
''')

AUTOTUNED = src('''
    import triton
    import triton.language as tl

    CONFIGS = [
        triton.Config({"BLOCK": 128}, num_warps=4),
        triton.Config({"BLOCK": 256}, num_warps=8),
    ]


    @triton.autotune(configs=CONFIGS, key=["n"])
    @triton.jit
    def tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


    @triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])
    @triton.jit
    def inline_tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)
''')

BASE = {
    "pkg/__init__.py": "",
    "pkg/helpers.py": HELPERS,
    "pkg/kernels.py": KERNELS,
    "pkg/rel.py": REL,
    "pkg/absolute.py": ABS,
    "pkg/modalias.py": MOD,
    "pkg/tuned.py": AUTOTUNED,
    "README.md": "not python",
    "setup.py": "from setuptools import setup\nsetup()\n",
}

ALL_KERNELS = {
    "pkg/kernels.py::scale_kernel", "pkg/kernels.py::plain_kernel", "pkg/rel.py::rel_kernel",
    "pkg/absolute.py::abs_kernel", "pkg/modalias.py::mod_kernel", "pkg/tuned.py::tuned_kernel",
    "pkg/tuned.py::inline_tuned_kernel", "pkg/helpers.py::unused",
}


def fingerprints(files: dict[str, str | bytes]) -> dict[str, str]:
    return {kid: k.fingerprint for kid, k in discover(FakeSnapshot(files)).kernels.items()}


def edited(path: str, old: str, new: str) -> dict[str, str]:
    files = dict(BASE)
    assert old in files[path], old
    files[path] = files[path].replace(old, new)
    return files


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    assert set(before) == set(after)
    return {k for k in before if before[k] != after[k]}


@pytest.fixture(scope="module")
def base_prints() -> dict[str, str]:
    return fingerprints(BASE)


# -- what is a kernel --------------------------------------------------------------------------------

def test_kernels_found_and_helpers_not_listed():
    found = discover(FakeSnapshot(BASE))
    assert set(found.kernels) == ALL_KERNELS
    # h is called by jit code in other modules, _local_helper in its own; `unused` is called by
    # nobody, so it may be a kernel launched from elsewhere and is listed
    assert "pkg/helpers.py::unused" in found.kernels
    assert "pkg/helpers.py::h" not in found.kernels
    assert "pkg/kernels.py::_local_helper" not in found.kernels
    assert found.broken == {}


def test_kernels_of_one_guarded_block_are_not_each_others_helpers():
    """GPTQModel's gguf kernels: every one inside one `if _TRITON_AVAILABLE:`, each wrapped below by
    the repository's autotune (`k = autotune(configs)(_k_impl)`) and launched through a function
    that takes the kernel (`kernel[grid](...)`). The block is each kernel's definition, its lines
    name every kernel, so each was the others' helper and none was listed: silence. A jit
    function of the block that a kernel's `def` calls stays its helper."""
    files = {"ops/gg.py": textwrap.dedent('''
        import triton
        import triton.language as tl
        from ops import tuning

        if triton is not None:
            @triton.jit
            def _scale(x):
                return x * 2.0

            @triton.jit
            def _q4_impl(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, _scale(tl.load(x_ptr + offs)))

            @triton.jit
            def _q5_impl(x_ptr, BLOCK: tl.constexpr):
                offs = tl.arange(0, BLOCK)
                tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)

            q4 = tuning.autotune(configs=[])(_q4_impl)
            q5 = tuning.autotune(configs=[])(_q5_impl)


        def _launch(kernel, x):
            kernel[(1,)](x)
    ''')}
    assert set(discover(FakeSnapshot(files)).kernels) == {"ops/gg.py::_q4_impl", "ops/gg.py::_q5_impl"}


def test_unused_jit_function_is_a_kernel():
    found = discover(FakeSnapshot({"pkg/helpers.py": HELPERS}))
    assert set(found.kernels) == {"pkg/helpers.py::h", "pkg/helpers.py::unused"}


def test_kernel_fields():
    k = discover(FakeSnapshot(BASE)).kernels["pkg/rel.py::rel_kernel"]
    assert (k.id, k.path, k.name, k.module) == ("pkg/rel.py::rel_kernel", "pkg/rel.py", "rel_kernel", "pkg.rel")
    assert k.lineno == 7  # the `def` line, below the decorator
    assert k.params == (Param("x_ptr", False, "*fp32"), Param("n", False, "i32"),
                        Param("BLOCK", True, None, Hint((1024,), "a block size (a power of two)")))
    assert {"pkg/rel.py", "pkg/helpers.py"} <= k.paths
    assert len(k.fingerprint) == 64


def test_helper_launched_with_a_grid_is_also_a_kernel():
    files = dict(BASE)
    files["pkg/launch.py"] = "import triton\nfrom pkg.helpers import h\n\ndef run(x):\n    h[(1,)](x)\n"
    assert "pkg/helpers.py::h" in discover(FakeSnapshot(files)).kernels


def test_a_launch_of_another_module_s_function_of_the_same_name_launches_no_helper():
    """FastVideo: `sparse.py`'s kernel calls its helper `_dq(...)`; `sla.py` has a kernel of its
    own named `_dq`, launched `_dq[grid]`. The launch is of `sla.py`'s: `sparse.py`'s `_dq` stays a
    helper (listed, it was compiled alone on guessed types and failed). A launch that cannot be
    told apart (`kernels[0][grid]` of an unknown list, or an import it cannot follow) still
    launches every function of that name."""
    helper = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef _dq(x):\n    return x * 2.0\n\n" \
             "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, _dq(tl.load(x_ptr)))\n\n\ndef run(x):\n    k[(1,)](x)\n"
    own = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef _dq(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\n" \
          "def run(x):\n    _dq[(1,)](x)\n"
    found = discover(FakeSnapshot({"ops/sparse.py": helper, "ops/sla.py": own}))
    assert set(found.kernels) == {"ops/sparse.py::k", "ops/sla.py::_dq"}
    unknown = "import elsewhere\n\n\ndef run(x):\n    elsewhere._dq[(1,)](x)\n"   # a module not in the repository
    assert set(discover(FakeSnapshot({"ops/sparse.py": helper, "ops/sla.py": own, "ops/run.py": unknown})).kernels) == \
        {"ops/sparse.py::k", "ops/sla.py::_dq", "ops/sparse.py::_dq"}


def test_a_package_vendored_deep_that_imports_itself_is_found_where_it_is():
    """unsloth-zoo vendors flash-linear-attention as `unsloth_zoo/_vendored/fla/`, whose modules
    import it as `fla` (the repository puts `_vendored/` on sys.path at run time): `exp2` from
    `fla.ops.utils.op` was a NameError in 6 kernels, `fla.utils`'s feature flags host code in 2.
    A vendored package that no module of its own imports by that name is not looked for."""
    kern = ("import triton\nimport triton.language as tl\nfrom mypkg.ops import scale\n\n"
            "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, scale(tl.load(x_ptr)))\n")
    ops = "import triton\n\n@triton.jit\ndef scale(x):\n    return x * 2.0\n"
    files = {"lib/__init__.py": "", "lib/_vendored/__init__.py": "", "lib/_vendored/mypkg/__init__.py": "",
             "lib/_vendored/mypkg/ops.py": ops, "lib/_vendored/mypkg/kern.py": kern}
    found = discover(FakeSnapshot(files))
    k = found.kernels["lib/_vendored/mypkg/kern.py::k"]
    assert "lib/_vendored/mypkg/ops.py" in k.paths and not k.unresolved
    changed = discover(FakeSnapshot({**files, "lib/_vendored/mypkg/ops.py": ops.replace("2.0", "3.0")}))
    assert changed.kernels["lib/_vendored/mypkg/kern.py::k"].fingerprint != k.fingerprint
    other = {**files, "lib/_vendored/mypkg/kern.py": kern.replace("from mypkg.ops", "from elsewhere.ops")}
    assert "lib/_vendored/mypkg/ops.py" not in discover(FakeSnapshot(other)).kernels["lib/_vendored/mypkg/kern.py::k"].paths


def test_paths_limits_what_is_returned_but_helpers_are_still_followed(base_prints):
    found = discover(FakeSnapshot(BASE), paths={"pkg/rel.py"})
    assert set(found.kernels) == {"pkg/rel.py::rel_kernel"}
    assert found.kernels["pkg/rel.py::rel_kernel"].fingerprint == base_prints["pkg/rel.py::rel_kernel"]


def test_src_layout_resolves_absolute_imports():
    files = {"src/pkg/__init__.py": "", "src/pkg/helpers.py": HELPERS, "src/pkg/absolute.py": ABS}
    found = discover(FakeSnapshot(files))
    k = found.kernels["src/pkg/absolute.py::abs_kernel"]
    assert k.module == "pkg.absolute"
    assert "src/pkg/helpers.py" in k.paths
    before = k.fingerprint
    files["src/pkg/helpers.py"] = HELPERS.replace("x * 2.0", "x * 4.0")
    assert discover(FakeSnapshot(files)).kernels["src/pkg/absolute.py::abs_kernel"].fingerprint != before



def test_functions_of_other_jit_compilers_are_not_kernels():
    # a CuTe DSL / numba module next to Triton ones: `@cute.jit` is not `@triton.jit`
    other = src('''
        import cutlass.cute as cute
        import numba
        import triton as tr
        from triton import jit
        from .compat import triton_jit_alias


        @cute.jit
        def cute_host(a, b):
            pass


        @numba.jit
        def numba_fn(x):
            return x


        @tr.jit
        def aliased_kernel(x_ptr):
            tl.store(x_ptr, 1.0)


        @jit
        def bare_kernel(x_ptr):
            tl.store(x_ptr, 1.0)


        @triton_jit_alias.jit
        def repo_wrapped_kernel(x_ptr):
            tl.store(x_ptr, 1.0)
    ''')
    bare_foreign = src('''
        from cutlass.cute import jit


        @jit
        def cute_bare(a, b):
            pass
    ''')
    guarded = src('''
        import importlib.util

        if importlib.util.find_spec("cutlass") is not None:
            import cutlass.cute as cute

            @cute.jit
            def cute_guarded(a, b):
                pass
    ''')
    found = discover(FakeSnapshot({"pkg/__init__.py": "", "pkg/compat.py": "", "pkg/mixed.py": other,
                                   "pkg/cute_only.py": bare_foreign, "pkg/cute_guarded.py": guarded}))
    assert set(found.kernels) == {"pkg/mixed.py::aliased_kernel", "pkg/mixed.py::bare_kernel",
                                  "pkg/mixed.py::repo_wrapped_kernel"}

# -- fingerprint: what is NOT a change ------------------------------------------------------------------

def test_fingerprint_is_deterministic(base_prints):
    assert fingerprints(BASE) == base_prints


def test_comments_docstrings_blank_lines_and_shifts_are_not_changes(base_prints):
    files = dict(BASE)
    files["pkg/kernels.py"] = (
        '"""Module docstring."""\n# header comment\n\n\n' +
        KERNELS.replace("    pid = tl.program_id(0)\n",
                        '    """Kernel docstring."""\n\n    # which block\n    pid = tl.program_id(0)  # pid\n\n')
        .replace("SCALE = 0.5", "SCALE = 0.5  # half")
    )
    files["pkg/helpers.py"] = "# moved down\n\n\n" + HELPERS.replace(
        "    return x * 2.0", '    """Double it."""\n    # twice\n    return x * 2.0')
    after = fingerprints(files)
    assert files["pkg/kernels.py"] != BASE["pkg/kernels.py"]
    assert after == base_prints


def test_new_code_above_the_kernel_that_it_does_not_read_is_not_a_change(base_prints):
    files = edited("pkg/kernels.py", "SCALE = 0.5\n",
                   "SCALE = 0.5\nOTHER = 3\n\n\ndef unrelated():\n    return OTHER\n")
    assert changed(base_prints, fingerprints(files)) == set()


def test_constant_read_only_by_the_host_wrapper_is_not_a_change(base_prints):
    files = edited("pkg/kernels.py", "WRAPPER_BLOCK = 1024", "WRAPPER_BLOCK = 2048")
    assert changed(base_prints, fingerprints(files)) == set()


def test_edit_of_another_function_in_the_helper_module_is_not_a_change(base_prints):
    files = edited("pkg/helpers.py", "return x + 1.0", "return x + 2.0")
    assert changed(base_prints, fingerprints(files)) == {"pkg/helpers.py::unused"}


# -- fingerprint: what IS a change ----------------------------------------------------------------------

def test_edit_in_kernel_body(base_prints):
    files = edited("pkg/kernels.py", "+ 1.0, mask=mask)", "+ 2.0, mask=mask)")
    assert changed(base_prints, fingerprints(files)) == {"pkg/kernels.py::plain_kernel"}


def test_edit_in_a_helper_of_another_module_reaches_every_import_style(base_prints):
    files = edited("pkg/helpers.py", "return x * 2.0", "return x * 3.0")
    assert changed(base_prints, fingerprints(files)) == {
        "pkg/rel.py::rel_kernel",          # from .helpers import h
        "pkg/absolute.py::abs_kernel",     # from pkg.helpers import h
        "pkg/modalias.py::mod_kernel",     # import pkg.helpers as H; H.h(x)
    }


def test_plain_import_and_dotted_call_reaches_the_helper():
    files = dict(BASE)
    files["pkg/dotted.py"] = MOD.replace("import pkg.helpers as H", "import pkg.helpers").replace(
        "H.h(x)", "pkg.helpers.h(x)").replace("mod_kernel", "dotted_kernel")
    files["pkg/fromdot.py"] = MOD.replace("import pkg.helpers as H", "from . import helpers").replace(
        "H.h(x)", "helpers.h(x)").replace("mod_kernel", "fromdot_kernel")
    before = fingerprints(files)
    files["pkg/helpers.py"] = HELPERS.replace("x * 2.0", "x * 5.0")
    after = fingerprints(files)
    assert {"pkg/dotted.py::dotted_kernel", "pkg/fromdot.py::fromdot_kernel"} <= changed(before, after)


def test_edit_in_a_same_module_helper(base_prints):
    files = edited("pkg/kernels.py", "return x * SCALE", "return x * SCALE * SCALE")
    assert changed(base_prints, fingerprints(files)) == {"pkg/kernels.py::scale_kernel"}


def test_module_constant_read_through_a_helper(base_prints):
    files = edited("pkg/kernels.py", "SCALE = 0.5", "SCALE = 0.25")
    assert changed(base_prints, fingerprints(files)) == {"pkg/kernels.py::scale_kernel"}


def test_module_constant_read_by_the_kernel_itself():
    files = dict(BASE)
    files["pkg/const.py"] = src('''
        import triton
        import triton.language as tl
        EPS = 1e-6
        @triton.jit
        def eps_kernel(x_ptr):
            tl.store(x_ptr, tl.load(x_ptr) + EPS)
    ''')
    before = fingerprints(files)
    files["pkg/const.py"] = files["pkg/const.py"].replace("1e-6", "1e-5")
    assert changed(before, fingerprints(files)) == {"pkg/const.py::eps_kernel"}


def test_autotune_config_change(base_prints):
    files = edited("pkg/tuned.py", '{"BLOCK": 256}, num_warps=8', '{"BLOCK": 256}, num_warps=4')
    assert changed(base_prints, fingerprints(files)) == {"pkg/tuned.py::tuned_kernel"}
    files = edited("pkg/tuned.py", '{"BLOCK": 64}, num_warps=2', '{"BLOCK": 64}, num_warps=1')
    assert changed(base_prints, fingerprints(files)) == {"pkg/tuned.py::inline_tuned_kernel"}


def test_autotune_key_change(base_prints):
    files = edited("pkg/tuned.py", 'configs=CONFIGS, key=["n"]', 'configs=CONFIGS, key=[]')
    assert changed(base_prints, fingerprints(files)) == {"pkg/tuned.py::tuned_kernel"}


# -- broken files ------------------------------------------------------------------------------------

def test_syntax_error_is_broken_with_kernel_names():
    bad = src('''
        import triton
        import triton.language as tl

        @triton.jit
        def first_kernel(x_ptr):
            tl.store(x_ptr, 1.0

        @triton.autotune(configs=[], key=[])
        @triton.jit
        def second_kernel(x_ptr):
            pass
    ''')
    files = dict(BASE)
    files["pkg/bad.py"] = bad
    found = discover(FakeSnapshot(files))
    assert set(found.kernels) == ALL_KERNELS  # the rest of the snapshot is still read
    broken = found.broken["pkg/bad.py"]
    assert isinstance(broken, Broken)
    assert broken.path == "pkg/bad.py"
    assert broken.names == ("first_kernel", "second_kernel")
    assert broken.error.startswith("pkg/bad.py:") and "SyntaxError" in broken.error


def test_non_utf8_is_broken():
    files = {"pkg/latin.py": b"import triton\n# caf\xe9\n@triton.jit\ndef k(x_ptr):\n    pass\n"}
    found = discover(FakeSnapshot(files))
    assert found.kernels == {}
    broken = found.broken["pkg/latin.py"]
    assert "not text in UTF-8" in broken.error and broken.names == ("k",)


def test_coding_cookie_is_honoured():
    """PEP 263: a `# -*- coding: latin-1 -*-` file is read as Python reads it."""
    files = {"pkg/latin.py": b"# -*- coding: latin-1 -*-\nimport triton\n# caf\xe9\n@triton.jit\ndef k(x_ptr):\n    pass\n"}
    found = discover(FakeSnapshot(files))
    assert set(found.kernels) == {"pkg/latin.py::k"} and not found.broken


def test_nul_bytes_are_broken_not_a_crash():
    found = discover(FakeSnapshot({"pkg/nul.py": b"import triton\n@triton.jit\ndef k(x):\n\x00\n"}))
    assert "pkg/nul.py" in found.broken


def test_files_without_triton_are_not_parsed():
    # a syntax error in a file that cannot hold kernels is not our business
    found = discover(FakeSnapshot({"tools/script.py": "def broken(:\n"}))
    assert found.kernels == {} and found.broken == {}


def test_a_broken_file_with_no_jit_decorator_is_no_kernel_file():
    """unsloth's models/rl.py once held an empty `try:` and mentions "triton.cudagraphs": it has no
    kernel, so it is no failed row (a broken file with a jit decorator still is)."""
    text = 'OPTIONS = {"triton.cudagraphs": False}\ntry:\nexcept Exception:\n    pass\n'
    found = discover(FakeSnapshot({"models/rl.py": text, "ops/k.py": "import triton\n@jit\ndef k(:\n"}))
    assert set(found.broken) == {"ops/k.py"}


def test_kernel_names_in():
    text = b"@triton.jit\ndef a(x):\n  pass\n@triton.heuristics({})\n@triton.jit(debug=True)\ndef b(x):\n"
    assert kernel_names_in(text) == ("a", "b")


def test_kernel_names_in_reads_any_file_in_one_pass_and_names_a_bounded_number():
    from ptxdiff.discovery.kernels import MAX_BROKEN_NAMES

    # decorators over a long run of blank lines: the former pattern retried the run from every
    # decorator (0.35 MB took 29 s, quadratic); each line is now read from 21 starts at most
    assert kernel_names_in(b"@triton.jit\n" * 40_000 + b"\n" * 500_000) == ()
    assert kernel_names_in(b"@triton.jit" * 90_000 + b"\n") == ()
    many = b"".join(b"@triton.jit\ndef k%d(:\n" % i for i in range(5 * MAX_BROKEN_NAMES))
    assert kernel_names_in(many) == tuple(f"k{i}" for i in range(MAX_BROKEN_NAMES))


def test_a_module_over_the_size_bound_is_broken_and_never_read_as_a_launch_site():
    big = b"#" * 1_000_001
    found = discover(FakeSnapshot({
        "ops/k.py": src('''
            import triton

            @triton.jit
            def k(x_ptr, n):
                pass
        '''),
        "ops/huge.py": b"import triton\n@triton.jit\ndef huge(x_ptr):\n    pass\n" + big,
        "ops/run.py": b"from ops.k import k\nk[(1,)](x, 7)\n" + big,   # its launch values are not read
    }))
    assert set(found.kernels) == {"ops/k.py::k"} and found.kernels["ops/k.py::k"].launch == ()
    error = "ops/huge.py: 1.0 MB, over the 1 MB bound for a module ptxdiff parses"
    assert found.broken["ops/huge.py"] == Broken("ops/huge.py", error, ("huge",))


# -- parameter kinds -----------------------------------------------------------------------------------

def kinds_of(code: str) -> dict:
    fn = ast.parse(src(code)).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return infer_param_kinds(fn)


def test_infer_param_kinds():
    kinds = kinds_of('''
        def k(x_ptr, X, n, stride_x, eps, foo, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(X + offs * stride_x, mask=mask)
            y = tl.load(x_ptr + offs, mask=mask)
            tl.store(x_ptr + offs, x * eps + y * foo, mask=mask)
    ''')
    # foo multiplies a value loaded from memory: a float scalar
    assert kinds == {"x_ptr": "*fp32", "X": "*fp32", "n": "i32", "stride_x": "i32", "eps": "fp32", "foo": "fp32"}


def test_infer_pointer_through_a_local_and_ints_from_calls():
    kinds = kinds_of('''
        def k(Out, In, rows, M, w):
            row = tl.program_id(0)
            for i in range(rows):
                p = In + row * 4
                q = Out + row
                tl.store(q, tl.load(p) * w)
            tl.cdiv(M, 2)
    ''')
    assert kinds == {"Out": "*fp32", "In": "*fp32", "rows": "i32", "M": "i32", "w": None}


def test_infer_string_annotation_wins():
    assert kinds_of('''
        def k(x: "*fp16", n: "i64", BLOCK: "tl.constexpr"):
            pass
    ''') == {"x": "*fp16", "n": "i64"}


def test_infer_a_pointer_type_annotation_is_its_pointer():
    """torchtitan annotates `counts: tl.pointer_type(tl.int64)`: triton reads "*i64" from it."""
    assert kinds_of('''
        def k(counts: tl.pointer_type(tl.int64), out_ptr):
            tl.store(out_ptr, tl.load(counts))
    ''') == {"counts": "*i64", "out_ptr": "*fp32"}


def test_load_base_beats_a_float_sounding_name():
    # `scale` is dereferenced: it is a pointer, not an fp32 scalar
    kinds = kinds_of('''
        def k(x_ptr, scale, alpha):
            s = tl.load(scale)
            tl.store(x_ptr, tl.load(x_ptr) * s * alpha)
    ''')
    assert kinds == {"x_ptr": "*fp32", "scale": "*fp32", "alpha": "fp32"}


def test_name_rules_for_ints():
    kinds = kinds_of('''
        def k(n_elements, seq_len, batch_size, N, Q):
            pass
    ''')
    assert kinds == {"n_elements": "i32", "seq_len": "i32", "batch_size": "i32", "N": "i32", "Q": None}


def test_offset_added_next_to_a_ptr_param_is_an_int():
    kinds = kinds_of('''
        def k(x_ptr, out_ptr, start, BLOCK: tl.constexpr):
            offs = start + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(x_ptr + offs))
    ''')
    assert kinds == {"x_ptr": "*fp32", "out_ptr": "*fp32", "start": "i32"}


def test_pointer_param_reached_through_a_local_named_ptrs():
    kinds = kinds_of('''
        def k(X, Y, BLOCK: tl.constexpr):
            cols = tl.arange(0, BLOCK)
            x_ptrs = X + cols
            y_ptrs = Y + cols
            tl.store(y_ptrs, tl.load(x_ptrs))
    ''')
    assert kinds == {"X": "*fp32", "Y": "*fp32"}


def test_is_none_check_does_not_make_an_optional_pointer_an_int():
    kinds = kinds_of('''
        def k(LOGITS, MASK, OLD_LOGP, L):
            off = tl.program_id(0)
            if MASK is not None:
                MASK += off * L
                if tl.load(MASK) == 0:
                    return
            if OLD_LOGP is None:
                old = 0.0
            else:
                old = tl.load(OLD_LOGP + off)
            tl.store(LOGITS + off, old)
    ''')
    assert kinds == {"LOGITS": "*fp32", "MASK": "*fp32", "OLD_LOGP": "*fp32", "L": "i32"}


def test_stride_suffix_beats_ptr_and_float_sounding_names():
    kinds = kinds_of('''
        def k(Mean_ptr, Mean_ptr_row_stride, Scale_ptr, Scale_row_stride, scale):
            row = tl.program_id(0)
            m = tl.load(Mean_ptr + row * Mean_ptr_row_stride)
            base = Scale_ptr + row * Scale_row_stride
            tl.store(base, tl.load(base) * m * scale)
    ''')
    assert kinds == {"Mean_ptr": "*fp32", "Mean_ptr_row_stride": "i32", "Scale_ptr": "*fp32",
                     "Scale_row_stride": "i32", "scale": "fp32"}


def test_int_name_prefixes_only_at_a_word_start():
    # "n_"/"num_" inside sum_non_ignore_weight or mean_value are not counts
    kinds = kinds_of('''
        def k(sum_non_ignore_weight, mean_value, n_heads, num_tokens, x_n_rows, NUM_SMS):
            pass
    ''')
    assert kinds == {"sum_non_ignore_weight": None, "mean_value": None, "n_heads": "i32", "num_tokens": "i32",
                     "x_n_rows": "i32", "NUM_SMS": "i32"}


def test_compare_with_a_float_literal_is_a_float():
    kinds = kinds_of('''
        def k(x_ptr, delta, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            if delta != 0.0:
                x = tl.minimum(x, delta)
            x = x * (x <= delta)
            tl.store(x_ptr + offs, x, mask=offs < n)
    ''')
    assert kinds == {"x_ptr": "*fp32", "delta": "fp32", "n": "i32"}


def test_pointer_whose_values_index_another_pointer_is_an_int_pointer():
    # labels/gather indices: `X + tl.load(Y)` needs Y to hold ints, or triton rejects pointer + float
    kinds = kinds_of('''
        def k(X_ptr, Y_ptr, LOGITS, INPUT_IDS, idx_ptr, x_ptr, out_ptr, stride, BLOCK: tl.constexpr):
            y = tl.load(Y_ptr)
            x_y = tl.load(X_ptr + y)
            ids = tl.load(INPUT_IDS)
            logit = tl.load(LOGITS + ids).to(tl.float32)
            rows = tl.load(idx_ptr + tl.arange(0, BLOCK)).to(tl.int64)
            ptrs = x_ptr + rows[:, None] * stride
            tl.store(out_ptr, tl.load(ptrs) + x_y + logit)
    ''')
    assert kinds == {"X_ptr": "*fp32", "Y_ptr": "*i32", "LOGITS": "*fp32", "INPUT_IDS": "*i32", "idx_ptr": "*i32",
                     "x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32"}


def test_value_computed_from_a_loaded_index_makes_its_pointer_an_int_pointer():
    kinds = kinds_of('''
        def k(row_start_ptr, expert_ptr, a_ptr, w_ptr, stride_a, stride_w, BLOCK_M: tl.constexpr):
            row_start = tl.load(row_start_ptr + tl.program_id(0))
            expert = tl.load(expert_ptr + tl.program_id(0))
            row_offs = row_start + tl.arange(0, BLOCK_M)
            a_ptrs = a_ptr + row_offs[:, None] * stride_a
            a = tl.load(a_ptrs)
            tl.store(w_ptr + expert * stride_w, tl.sum(a))
    ''')
    assert kinds == {"row_start_ptr": "*i32", "expert_ptr": "*i32", "a_ptr": "*fp32", "w_ptr": "*fp32",
                     "stride_a": "i32", "stride_w": "i32"}


def test_a_stride_added_to_an_unnamed_pointer_is_an_int():
    # two params added with no `*ptr*` name among them: the one whose name says stride is the offset
    kinds = kinds_of('''
        def k(X, Y, stride_x, BLOCK: tl.constexpr):
            x = tl.load(X + stride_x + tl.arange(0, BLOCK))
            tl.store(Y + tl.arange(0, BLOCK), x)
    ''')
    assert kinds == {"X": "*fp32", "Y": "*fp32", "stride_x": "i32"}


def test_a_scale_pointer_feeding_a_float_dot_is_a_float_pointer():
    # the dequantized operand is shifted and masked (ints), then scaled: the scales are floats of
    # the other operand's type, or the dot's operands differ
    kinds = kinds_of('''
        def k(A, B, Scales, Zeros, C, BLOCK: tl.constexpr):
            a = tl.load(A + tl.arange(0, BLOCK))
            if A.dtype.element_ty == tl.float16:
                a = a * 2
            b = tl.load(B + tl.arange(0, BLOCK))
            b = (b >> 4) & 0xF
            s = tl.load(Scales + tl.arange(0, BLOCK))
            z = tl.load(Zeros + tl.arange(0, BLOCK))
            b = (b - z) * s
            tl.store(C + tl.arange(0, BLOCK), tl.dot(a, b))
    ''')
    assert kinds == {"A": "*fp16", "B": "*i32", "Scales": "*fp16", "Zeros": "*i32", "C": "*fp32"}


def test_an_int8_dot_leaves_its_scale_alone():
    # both operands loaded from index-like (int) pointers: nothing says the dot is float
    kinds = kinds_of('''
        def k(A, B, scale_ptr, C, BLOCK: tl.constexpr):
            a = tl.load(A + tl.arange(0, BLOCK))
            b = tl.load(B + tl.arange(0, BLOCK))
            s = tl.load(scale_ptr + tl.arange(0, BLOCK))
            tl.store(C + (a >> 1), tl.dot(a, b * s))
            tl.store(C + (b >> 1), 0)
            tl.store(C + (s >> 1), 0)
    ''')
    assert kinds["scale_ptr"] == "*i32"


def test_types_the_kernel_documents_beat_the_guesses():
    from ptxdiff.discovery.documented import documented_types
    text = src('''
        @triton.jit
        def k(a_ptr,
              s_ptr,  # type: tl.pointer_type(tl.bfloat16)
              n,
              out_ptr,
              eps,
              BLOCK: tl.constexpr):
            """Dequantize.

            Args:
                a_ptr (torch.float16): the input
                n: number of rows, int64
                out_ptr: where the result goes
                eps: a small float16 number
            """
            x = tl.load(a_ptr + tl.arange(0, BLOCK))
    ''')
    fn = ast.parse(text).body[0]
    assert isinstance(fn, ast.FunctionDef)
    kinds = {"a_ptr": "*fp32", "s_ptr": "*i32", "n": "i32", "out_ptr": "*fp32", "eps": "fp32"}
    # a scalar documented as a float16 stays what it is: a scalar's type is fp32 or i32 at launch
    assert documented_types(text, fn, kinds) == {"s_ptr": "*bf16", "a_ptr": "*fp16", "n": "i64"}


def test_discover_reads_the_documented_types_of_a_kernel():
    found = discover(FakeSnapshot({"k.py": src('''
        import triton
        import triton.language as tl

        @triton.jit
        def k(x_ptr, scale_ptr, BLOCK: tl.constexpr):
            """scale_ptr: per-row scales, bfloat16."""
            s = tl.load(scale_ptr)
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + tl.arange(0, BLOCK)) * s)
    ''')}))
    params = {p.name: p.kind for p in found.kernels["k.py::k"].params}
    assert params == {"x_ptr": "*fp32", "scale_ptr": "*bf16", "BLOCK": None}


def test_pointers_selected_by_where_are_pointers():
    # `out = tl.where(is_v, cache_v, out_qk)`: the store's address is one of the params
    kinds = kinds_of('''
        def k(xq, out_q, cache_k, cache_v, A1, A2, A3, n, BLOCK: tl.constexpr):
            is_q = tl.program_id(0) < n
            is_v = tl.program_id(1) < n
            out_qk = tl.where(is_q, out_q, cache_k)
            out = tl.where(is_v, cache_v, out_qk)
            cols = tl.arange(0, BLOCK)
            tl.store(out + cols, tl.load(xq + cols))
            A = tl.where(is_q, A1, tl.where(is_v, A2, A3))
            tl.store(A + cols, 0)
    ''')
    assert kinds == {"xq": "*fp32", "out_q": "*fp32", "cache_k": "*fp32", "cache_v": "*fp32", "A1": "*fp32",
                     "A2": "*fp32", "A3": "*fp32", "n": "i32"}


def test_a_pointer_holding_addresses_is_an_int64_pointer():
    kinds = kinds_of('''
        def k(group_a_ptrs, BLOCK: tl.constexpr):
            g = tl.program_id(0)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            tl.store(a_ptr + tl.arange(0, BLOCK), tl.zeros([BLOCK], dtype=tl.float16))
    ''')
    assert kinds == {"group_a_ptrs": "*i64"}


def test_a_param_handed_on_through_an_offset_local_takes_the_helper_s_pointer_type():
    from ptxdiff.discovery.params import kinds_through_helpers
    tree = ast.parse(src('''
        def inner(acc, K_scale_ptr, n):
            for i in range(n):
                acc += tl.load(K_scale_ptr)
                K_scale_ptr += 1
            return acc

        def k(Out, K_scale, stride_h, n):
            K_scale_ptr = K_scale + tl.program_id(0) * stride_h
            tl.store(Out, inner(0.0, K_scale_ptr, n))
    '''))
    helper, fn = tree.body
    assert isinstance(helper, ast.FunctionDef) and isinstance(fn, ast.FunctionDef)
    kinds = kinds_through_helpers(fn, infer_param_kinds(fn), {"inner": helper})
    assert kinds["K_scale"] == "*fp32" and kinds["stride_h"] == "i32"     # not the float scalar its name suggests


def test_an_attention_inner_loop_s_operands_by_name_and_use():
    """Our own small attention kernel shaped like the varlen ones: `K` (a dimension letter) is the
    pointer term of the address it hands on; a stride multiplying loaded offsets is an int and
    makes them offsets (`*i32`); `p.to(tl.float16)` into `tl.dot(p, v)` makes V's values fp16."""
    from ptxdiff.discovery.params import kinds_through_helpers
    tree = ast.parse(src('''
        def inner(acc, q, K_ptrs, V_ptrs, stride_kn, kv_len, BLOCK_N: tl.constexpr):
            for start_n in range(0, kv_len, BLOCK_N):
                k = tl.load(K_ptrs)
                p = tl.dot(q, k)
                p = p.to(tl.float16)
                v = tl.load(V_ptrs)
                acc += tl.dot(p, v)
                K_ptrs += BLOCK_N * stride_kn
            return acc

        def k(Q, K, V, cu_seqlens_k, Out, stride_kn, BLOCK_N: tl.constexpr):
            start = tl.load(cu_seqlens_k + tl.program_id(0))
            offs = tl.arange(0, BLOCK_N)
            K_ptrs = K + start * stride_kn + offs[:, None]
            V_ptrs = V + start * stride_kn + offs[:, None]
            q = tl.load(Q + offs[:, None])
            acc = inner(tl.zeros([BLOCK_N, BLOCK_N], dtype=tl.float32), q, K_ptrs, V_ptrs, stride_kn, 64, BLOCK_N)
            tl.store(Out + offs[:, None], acc)
    '''))
    helper, fn = tree.body
    assert isinstance(helper, ast.FunctionDef) and isinstance(fn, ast.FunctionDef)
    kinds = kinds_through_helpers(fn, infer_param_kinds(fn), {"inner": helper})
    assert kinds == {"Q": "*fp32", "K": "*fp32", "V": "*fp16", "cu_seqlens_k": "*i32", "Out": "*fp32",
                     "stride_kn": "i32"}


def test_a_boolean_mask_folded_into_a_dot_operand_does_not_type_the_other_operand():
    """SageAttention's per-block kernel: `mask_ptrs.dtype.element_ty == tl.int1` makes the mask
    `*i1`, and `p` is computed with the mask's values before `tl.dot(p, v)`; a dot never takes an
    int1 operand, so V is typed by `p.to(tl.float16)`, not by the mask (it read `*i1` before)."""
    from ptxdiff.discovery.params import kinds_through_helpers
    tree = ast.parse(src('''
        def inner(acc, q, K_ptrs, V_ptrs, mask_ptrs, BLOCK_N: tl.constexpr):
            m = tl.load(mask_ptrs)
            k = tl.load(K_ptrs)
            qk = tl.dot(q, k)
            if mask_ptrs.dtype.element_ty == tl.int1:
                qk = qk + tl.where(m, 0, -1.0e6)
            p = qk.to(tl.float16)
            v = tl.load(V_ptrs)
            acc += tl.dot(p, v)
            return acc

        def k(Q, K, V, mask, Out, BLOCK_N: tl.constexpr):
            offs = tl.arange(0, BLOCK_N)
            q = tl.load(Q + offs[:, None])
            K_ptrs = K + offs[:, None]
            V_ptrs = V + offs[:, None]
            mask_ptrs = mask + offs[:, None]
            acc = inner(tl.zeros([BLOCK_N, BLOCK_N], dtype=tl.float32), q, K_ptrs, V_ptrs, mask_ptrs, BLOCK_N)
            tl.store(Out + offs[:, None], acc)
    '''))
    helper, fn = tree.body
    assert isinstance(helper, ast.FunctionDef) and isinstance(fn, ast.FunctionDef)
    kinds = kinds_through_helpers(fn, infer_param_kinds(fn), {"inner": helper})
    assert (kinds["mask"], kinds["V"], kinds["K"]) == ("*i1", "*fp16", "*fp32"), kinds


def test_a_pointer_named_for_integer_contents_holds_ints():
    kinds = kinds_of('''
        def k(X, cu_seqlens, token_ids, Y, BLOCK: tl.constexpr):
            a = tl.load(cu_seqlens)
            b = tl.load(token_ids)
            tl.store(Y + tl.arange(0, BLOCK), tl.load(X + tl.arange(0, BLOCK)) + a + b)
    ''')
    assert kinds == {"X": "*fp32", "cu_seqlens": "*i32", "token_ids": "*i32", "Y": "*fp32"}


def test_the_workspace_of_a_device_side_tma_descriptor_is_a_pointer():
    """triton 3.3's `experimental_device_tensormap_create2d(desc_ptr=workspace + off, ...)`: the
    workspace holds descriptors (typed i32, triton's inliner crashes)."""
    kinds = kinds_of('''
        def k(a_desc_ptr, workspace, c_ptr, BM: tl.constexpr):
            c_desc_ptr = workspace + tl.program_id(0) * 128
            tl.extra.cuda.experimental_device_tensormap_create2d(desc_ptr=c_desc_ptr, global_address=c_ptr,
                                                                 load_size=[BM, BM], global_size=[64, 64],
                                                                 element_ty=c_ptr.dtype.element_ty)
            tl.extra.cuda.experimental_tensormap_fenceproxy_acquire(c_desc_ptr)
            a = tl._experimental_descriptor_load(a_desc_ptr, [0, 0], [BM, BM], tl.float16)
            tl._experimental_descriptor_store(c_desc_ptr, a, [0, 0])
    ''')
    assert kinds == {"a_desc_ptr": "*fp32", "workspace": "*fp32", "c_ptr": "*fp32"}
