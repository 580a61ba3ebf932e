"""The restricted evaluator: module values computed from source text, never executed."""

from __future__ import annotations

import textwrap

import pytest

from ptxdiff.evaluator.interp import Interp
from ptxdiff.evaluator.values import Constexpr, DType, Raised, Refused, TritonConfig
from ptxdiff.source.modules import FileSet, ModuleIndex
from ptxdiff.targets import Device


def interp(files: dict[str, str], cc: int = 90) -> Interp:
    snap = FileSet({p: textwrap.dedent(t).encode() for p, t in files.items()})
    return Interp(ModuleIndex(snap), Device.for_target(cc))


def value(files: dict[str, str], name: str, path: str = "m.py", cc: int = 90):
    return interp(files, cc).env(path).resolve(name)


def test_literals_arithmetic_containers_and_comprehensions():
    src = """
        import math
        A = 3
        B = [A * i for i in range(4) if i % 2] + [2 ** 10]
        C = {k: v for k, v in zip("ab", (1.5, -2))}
        D = math.ceil(7 / 2), max(B), sorted({3, 1, 2}), "x{}".format(A), f"{A:03d}"
        E = (lambda n: n + 1)(A) if A > 2 else None
    """
    files = {"m.py": src}
    assert value(files, "B") == [3, 9, 1024]
    assert value(files, "C") == {"a": 1.5, "b": -2}
    assert value(files, "D") == (4, 1024, [1, 2, 3], "x3", "003")
    assert value(files, "E") == 4


def test_triton_values_configs_constexprs_dtypes():
    src = """
        import triton
        import triton.language as tl
        BLOCK: tl.constexpr = tl.constexpr(128)
        DT = tl.bfloat16
        CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w, num_stages=2) for b in (64, BLOCK) for w in (4, 8)]
        N = triton.cdiv(1000, 128) + triton.next_power_of_2(100)
    """
    files = {"m.py": src}
    assert value(files, "BLOCK") == Constexpr(128)
    assert value(files, "DT") == DType("bfloat16")
    configs = value(files, "CONFIGS")
    assert configs[0] == TritonConfig((("BLOCK", 64),), 4, 2) and len(configs) == 4
    assert configs[-1] == TritonConfig((("BLOCK", 128),), 8, 2)
    assert value(files, "N") == 8 + 128


def test_a_constant_of_triton_s_is_the_value_it_holds():
    """`core.CONSTEXPR_0` (a kernel's default `descending: tl.constexpr = core.CONSTEXPR_0`) is a
    `tl.constexpr` of triton's own holding 0: read as that value, however it is reached, and false;
    before, an opaque name that the compiler could not convert (`cannot convert ... to tensor`)."""
    src = """
        import triton.language as tl
        import triton.language.core as core
        from triton.language.core import CONSTEXPR_0
        A = tl.core.CONSTEXPR_0
        B = core.CONSTEXPR_0
        C = 1 if CONSTEXPR_0 else 2
    """
    files = {"m.py": src}
    assert value(files, "A") == value(files, "B") == value(files, "CONSTEXPR_0") == Constexpr(0)
    assert value(files, "C") == 2


def test_dict_of_keywords_holds_any_value_as_a_literal_does():
    """`@triton.heuristics(dict(EVEN=lambda args: ...))`: before, "dict() of <function <lambda>>"
    was refused and every value the heuristics compute was guessed instead."""
    files = {"m.py": """
        H = dict(EVEN=lambda args: args["n"] % 2 == 0, HALF=lambda args: args["n"] // 2)
        K = dict(H, ONE=1)
        EVEN = H["EVEN"]({"n": 4})
        HALF = K["HALF"]({"n": 4})
    """}
    assert value(files, "EVEN") is True and value(files, "HALF") == 2
    assert sorted(value(files, "K")) == ["EVEN", "HALF", "ONE"]


def test_a_default_is_evaluated_where_the_function_is_made():
    """apple/ml-cross-entropy's `triton.heuristics({k: (lambda args, _v=v: _v) for k, v in ...})`:
    before, a default was evaluated when the function was first called, so every lambda of the
    comprehension returned its last value (BLOCK_B=4, the config's num_stages, not 128). An error in
    a default is raised where the function is called, as before."""
    files = {"m.py": """
        VALUES = {"BLOCK": 128, "WIDE": 3}
        H = {k: (lambda args, _v=v: _v) for k, v in VALUES.items()}
        def build():
            fns = []
            for n in (1, 2):
                def f(*, _n=n):
                    return _n
                fns = fns + [f]
            return [g() for g in fns]
        BLOCK = H["BLOCK"]({})
        NS = build()
        def broken(x=undefined_name):
            return x
        AFTER = 1
        CALLED = broken()
    """}
    assert value(files, "BLOCK") == 128 and value(files, "NS") == [1, 2]
    assert value(files, "AFTER") == 1
    with pytest.raises((Raised, Refused)):
        value(files, "CALLED")


def test_a_refused_assignment_at_module_level_sinks_only_the_names_it_binds():
    """GPTQModel's `if _TRITON_AVAILABLE:` block: `q4 = tuning.autotune(...)(_q4_impl)` calls a
    repository class the evaluator does not interpret; before, the whole block was refused and
    `_q4_impl`, defined above it in the block, could not be read. The refusal is `q4`'s value,
    raised where `q4` is read."""
    files = {"m.py": """
        from tuning import Tuner
        FLAG = True
        if FLAG:
            def kernel():
                return 1
            q4 = Tuner(configs=[])(kernel)
            AFTER = 2
    """, "tuning.py": """
        import triton
        class Tuner(triton.KernelInterface):
            pass
    """}
    env = interp(files).env("m.py")
    assert env.resolve("kernel").name == "kernel" and env.resolve("AFTER") == 2
    with pytest.raises(Refused):
        env.resolve("q4")


def test_a_name_has_the_value_python_would_give_at_that_point():
    src = """
        X = 1
        Y = X * 2
        X = 3
        CONFIGS = [1]
        CONFIGS.append(2)
        CONFIGS += [3]
        if X > 2:
            Z = "big"
        else:
            Z = "small"
    """
    files = {"m.py": src}
    assert value(files, "Y") == 2 and value(files, "X") == 3
    assert value(files, "CONFIGS") == [1, 2, 3]
    assert value(files, "Z") == "big"


def test_device_questions_are_answered_for_the_target():
    src = """
        import torch
        import triton
        HOPPER = torch.cuda.get_device_capability()[0] == 9 and "NVIDIA H" in torch.cuda.get_device_name(0)
        SMEM = triton.runtime.driver.active.utils.get_device_properties(0)["max_shared_mem"]
        WARPS = [2, 4] if HOPPER else [2, 4, 8]
        TARGET = triton.runtime.driver.active.get_current_target().arch
    """
    files = {"m.py": src}
    assert value(files, "WARPS", cc=90) == [2, 4] and value(files, "WARPS", cc=80) == [2, 4, 8]
    assert value(files, "SMEM", cc=90) == 232448 and value(files, "SMEM", cc=86) == 101376
    assert value(files, "TARGET", cc=120) == 120


def test_a_probe_for_a_vendor_s_tool_answers_for_an_nvidia_machine():
    """`is_cuda()` written as `shutil.which("nvidia-smi")`, its siblings for other vendors, and a
    proxy that wants exactly one of them: the compile target is an NVIDIA machine. Any other
    program on PATH stays a question of the reviewer's machine, refused."""
    src = """
        import shutil
        def is_cuda():
            return shutil.which("nvidia-smi") is not None
        def is_hip():
            return bool(shutil.which("rocm-smi"))
        def is_ascend():
            return shutil.which("npu-smi") is not None
        ACTIVE = [name for probe, name in [(is_cuda, "cuda"), (is_hip, "hip"), (is_ascend, "ascend")] if probe()]
    """
    assert value({"m.py": src}, "ACTIVE") == ["cuda"]
    with pytest.raises(Refused, match="shutil.which, which is host code"):
        value({"m.py": "import shutil\nGIT = shutil.which('git')\n"}, "GIT")


def test_calls_made_for_their_effect_on_the_host_answer_none():
    """A module that sets triton's allocator for TMA descriptors (or a seed) at import: nothing of
    what triton compiles depends on it, so the module's names still resolve."""
    src = """
        import torch
        import triton
        import triton.language as tl
        TMA = hasattr(tl, "make_tensor_descriptor")
        if TMA:
            def alloc_fn(size, alignment, stream):
                return torch.empty(size, dtype=torch.int8)
            triton.set_allocator(alloc_fn)
        torch.manual_seed(0)
        BLOCK = 128
    """
    assert value({"m.py": src}, "BLOCK") == 128


def test_enum_classmethod_and_try_except_as_real_repos_write_them():
    # the shape of flash-linear-attention's check_shared_mem(): an Enum, a classmethod, KeyError caught
    src = """
        from enum import Enum
        from functools import cache
        import triton

        class Backend(Enum):
            ADA = 101376
            HOPPER = 232448
            DEFAULT = 102400

            @classmethod
            def get_shared_memory(cls, arch):
                try:
                    return cls[arch.upper()].value
                except KeyError:
                    return cls.DEFAULT.value

        @cache
        def check_shared_mem(arch="none", idx=0):
            try:
                props = [triton.runtime.driver.active.utils.get_device_properties(i)["max_shared_mem"] for i in range(1)]
                return props[idx] >= Backend.get_shared_memory(arch)
            except Exception:
                return False

        BKV = [64, 128] if check_shared_mem() else [32]
        ADA = check_shared_mem("ada")
    """
    files = {"m.py": src}
    assert value(files, "BKV", cc=90) == [64, 128]
    assert value(files, "BKV", cc=86) == [32]
    assert value(files, "ADA", cc=86) is True


def test_imports_of_repository_modules_and_triton_fallbacks():
    files = {
        "pkg/__init__.py": "",
        "pkg/consts.py": "BLOCK = 256\nBAD = open('/etc/passwd').read()\n",
        "pkg/m.py": """
            from .consts import BLOCK, BAD
            try:
                from triton.language.extra.no_such_module import rsqrt
            except ImportError:
                from triton.language.extra.libdevice import rsqrt
            import pkg.consts as c
            TWICE = BLOCK * 2 + c.BLOCK
        """,
    }
    it = interp(files)
    env = it.env("pkg/m.py")
    assert env.resolve("TWICE") == 768       # BAD is imported beside BLOCK but never needed
    assert env.resolve("rsqrt").dotted == "triton.language.extra.libdevice.rsqrt"
    with pytest.raises(Refused, match=r"pkg/consts.py:2: .*open"):
        env.resolve("BAD")


@pytest.mark.parametrize("expr", [
    "open('/tmp/x', 'w')",
    "__import__('os').system('true')",
    "eval('1')",
    "os.system('true')",
    "subprocess.run(['true'])",
    "os.path.exists('/')",
    "pathlib.Path('/').read_text()",
    "(lambda: 0).__code__",
    "[].__class__.__base__.__subclasses__()",
    "getattr(os, 'system')('true')",
    "type('x', (), {})",
    "2 ** 10 ** 10",
    "list(range(10 ** 9))",
    "'x' * 10 ** 9",
])
def test_what_reaches_files_processes_or_attributes_is_refused_with_its_line(expr):
    src = f"import os\nimport subprocess\nimport pathlib\nX = {expr}\n"
    with pytest.raises((Refused, Raised)) as info:
        value({"m.py": src}, "X")
    if isinstance(info.value, Refused):
        assert "m.py:4" in str(info.value)


def test_loops_are_bounded():
    src = """
        def spin():
            n = 0
            while True:
                n += 1
            return n
        X = spin()
    """
    with pytest.raises(Refused, match="evaluation steps"):
        value({"m.py": src}, "X")


def test_environment_reads_as_unset(monkeypatch):
    monkeypatch.setenv("FAST_OPS", "1")
    src = "import os\nFAST = os.environ.get('FAST_OPS', '0') == '1' or os.getenv('FAST_OPS') == '1'\n"
    assert value({"m.py": src}, "FAST") is False


def test_import_cycles_and_self_imports_do_not_recurse():
    files = {"a.py": "from b import Y\nX = 1\nZ = Y\n", "b.py": "from a import X\nY = X + 1\n",
             "c.py": "import c\nW = 5\nV = c.W\n"}
    assert value(files, "Y", "b.py") == 2
    assert value(files, "V", "c.py") == 5
    with pytest.raises((Refused, Raised)):
        value({"a.py": "from b import Y\nX = Y\n", "b.py": "from a import X\nY = X\n"}, "X", "a.py")


def test_host_calls_under_except_exception_take_the_handler_and_say_so():
    src = """
        def npu():
            try:
                from transformers.utils import is_torch_npu_available
                return is_torch_npu_available()
            except Exception:
                return False
        ON_NPU = npu()
    """
    it = interp({"m.py": src})
    assert it.env("m.py").resolve("ON_NPU") is False
    assert any("transformers.utils" in a and "assumed" in a for a in it.assumptions)
    # without a handler that catches it, the same call is refused
    with pytest.raises(Refused):
        value({"m.py": "from transformers.utils import f\nX = f()\n"}, "X")


def test_version_checks_compare_the_installed_triton():
    src = """
        from packaging import version
        import triton
        NEW = version.parse(triton.__version__) >= version.parse("3.0.0")
    """
    assert value({"m.py": src}, "NEW") is True


def test_another_package_s_version_wrapper_parses_versions_and_says_so():
    """unsloth: `from unsloth_zoo.utils import Version`; `Version(triton.__version__) >= Version("3.0.0")`."""
    src = """
        import triton
        from unsloth_zoo.utils import Version
        NEW = Version(triton.__version__) >= Version("3.0.0")
    """
    it = interp({"m.py": src})
    assert it.env("m.py").resolve("NEW") is True
    assert any("unsloth_zoo.utils.Version" in a and "assumed" in a for a in it.assumptions)
    with pytest.raises(Refused):  # other calls into that package are still host code
        value({"m.py": "from unsloth_zoo.utils import f\nX = f('3.0')\n"}, "X")


def test_another_package_imported_under_except_importerror_is_taken_as_missing():
    """unsloth's device_type.py: `try: from unsloth_zoo.mlx import f / except ImportError: return
    False`, then `f()`: the fallback runs and that is said, rather than refusing the call."""
    src = """
        def is_mlx_available():
            try:
                from unsloth_zoo.mlx import is_mlx_available as f
            except ImportError:
                return False
            return f()
        MLX = is_mlx_available()
        try:
            from triton.language.extra.cuda import libdevice
            HAS_LIBDEVICE = True
        except ImportError:
            HAS_LIBDEVICE = False
        try:
            import einops
        except ImportError:
            einops = None
    """
    it = interp({"m.py": src})
    env = it.env("m.py")
    assert env.resolve("MLX") is False and env.resolve("einops") is None
    assert env.resolve("HAS_LIBDEVICE") is True            # triton is present: its modules are checked
    assert any("unsloth_zoo.mlx" in a and "not installed" in a for a in it.assumptions)


# -- sizes: what would be built is measured first ------------------------------------------------------

def _outcome(expr: str) -> str:
    src = f"import itertools, math, operator, functools\nX = {expr}\n"
    try:
        return f"value {value({'m.py': src}, 'X')!r}"
    except Refused as e:
        return f"refused {e}"
    except Raised as e:
        return f"raised {e}"


def _with_memory_cap(fn) -> str:
    """fn() in a forked child whose address space may grow by 1 GiB at most: a bomb that was built
    before it was refused dies there with MemoryError instead of taking the machine."""
    import os
    import resource

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            with open("/proc/self/statm") as f:
                size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (size + (1 << 30), resource.getrlimit(resource.RLIMIT_AS)[1]))
            result = fn()
        except BaseException as e:
            result = f"{type(e).__name__}: {e}"
        os.write(write, result.encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode()


@pytest.mark.parametrize("expr, bound", [
    ("'a'.ljust(10**10)", "str.ljust to a width of 10000000000 (more than 100000)"),
    ("'a'.center(width=10**10)", "str.center to a width of 10000000000 (more than 100000)"),
    ("'a'.zfill(10**10)", "str.zfill to a width of 10000000000 (more than 100000)"),
    ("(0).to_bytes(10**10)", "int.to_bytes to a length of 10000000000 (more than 100000)"),
    ("'a' * 10**10", "a value of more than 100000 elements"),
    ("b'a' * 10**10", "a value of more than 100000 elements"),
    ("operator.mul('a', 10**10)", "a value of more than 100000 elements"),
    ("format(1, '>10000000000')", "a format width or precision of 10000000000 (more than 100000)"),
    ("format(1.0, '.10000000000f')", "a format width or precision of 10000000000 (more than 100000)"),
    ("'{:>10000000000}'.format(1)", "a format width or precision of 10000000000 (more than 100000)"),
    ("'{0:{1}}'.format(1, '>10000000000')", "a format width or precision of 10000000000 (more than 100000)"),
    ("f'{1:>10000000000}'", "a format width or precision of 10000000000 (more than 100000)"),
    ("'%10000000000d' % 1", "a format width or precision of 10000000000 (more than 100000)"),
    ("'%.10000000000f' % 1.0", "a format width or precision of 10000000000 (more than 100000)"),
    ("'%*d' % (10**10, 1)", "a `*` width or precision in % formatting is not evaluated"),
    ("pow(3, 10**10, None)", "a power too large to compute"),
    ("math.perm(10**9, 10**5)", "math.perm of more than 4096 bits"),
    ("math.comb(10**9, 10**5)", "math.comb of more than 4096 bits"),
    ("math.prod([2**2000] * 100)", "math.prod of more than 4096 bits"),
    ("int('9' * 10**5)", "int() of a text of 100000 characters (more than 5000)"),
    ("round(5, -10**10)", "round() to -10000000000 digits (more than 4096)"),
    ("range(10**30)", "a range of more than 100000 elements"),
    ("''.join(['x' * 100000] * 100000)", "str.join of more than 100000 characters"),
    ("('x' * 100000).replace('', 'y' * 100000)", "str.replace to more than 100000 characters"),
    ("str([[0] * 100000] * 100000)", "str() of a value as text: more than 100000 characters"),
    ("f'{[[0] * 100000] * 100000}'", "an f-string field as text: more than 100000 characters"),
    ("'{}'.format([[0] * 100000] * 100000)", "str.format of more than 100000 characters"),
    ("('{0}' * 30000).format('x' * 100000)", "str.format of more than 100000 characters"),
    ("'%s' % ([[0] * 100000] * 100000,)", "% formatting of more than 100000 characters"),
    ("sum([[0] * 100000] * 100000, [])", "sum() of sequences into more than 100000 elements"),
    ("list(itertools.permutations(range(100000)))", "itertools.permutations of more than 1000000 elements"),
    ("list(itertools.product(range(10), repeat=100000))", "itertools.product of more than 100000 elements"),
    ("list(itertools.accumulate([[0] * 1000] * 1000))", "itertools.accumulate of values other than numbers"),
    ("[[0] * 100000 for _ in range(100000)]", "more than 20000000 elements built in all"),
    ("'{0.__class__}'.format(1)", "an attribute in a format field ({0.__class__}) is not evaluated"),
])
def test_what_would_build_gigabytes_is_refused_before_it_is_built(expr, bound):
    got = _with_memory_cap(lambda: _outcome(expr))
    assert got.startswith("refused m.py:") and bound in got, got


def test_growing_a_container_in_place_is_bounded():
    src = """
        def grow():
            a = [0] * 100000
            for _ in range(40):
                a.extend(a)
            return a
        X = grow()
    """
    got = _with_memory_cap(lambda: _outcome_of(src))
    assert "list.extend to more than 100000 elements" in got, got


def _outcome_of(src: str) -> str:
    try:
        return f"value {value({'m.py': src}, 'X')!r}"
    except Refused as e:
        return f"refused {e}"


@pytest.mark.parametrize("expr", [
    "'ab'.ljust(8, '.') + 'x'.center(5) + '7'.zfill(3)", "(258).to_bytes(2, 'big')",
    "'{0:>6}|{1[1]}|{k:.2f}'.format('r', [1, 2], k=3.14159)", "'{}{}'.format(1, 'a')", "f'{42:08d}{3.5:>7.2f}{\"s\"!r}'",
    "'%5.1f|%-4s|%x' % (2.25, 'ab', 255)", "'%(n)03d' % {'n': 7}", "pow(3, 200, 1000)", "pow(2, 10, None)",
    "math.comb(60, 30)", "math.perm(20, 5)", "math.prod([2 ** 100] * 10)", "math.prod([0.5] * 1000)", "math.lcm(12, 18, 30)",
    "len(list(itertools.product(range(4), repeat=5)))", "len(list(itertools.permutations(range(6))))",
    "list(itertools.combinations('abcd', 2))", "list(itertools.accumulate([1, 2, 3]))",
    "','.join(str(i) for i in range(1000)).replace(',', ';;')", "sum([[1], [2, 3]], [])", "round(12345, -2)",
    "int('1' * 100)", "str([[0] * 10] * 10)", "operator.mul('ab', 3)", "'x' * 100000 == 'x' * 100000",
])
def test_sizes_within_the_bounds_evaluate_as_python_does(expr):
    import itertools  # noqa: F401  (the names the expressions use, for Python's own answer)
    import math  # noqa: F401
    import operator  # noqa: F401

    assert _outcome(expr) == f"value {eval(expr)!r}"


def test_host_code_packages_run_at_import_is_modelled():
    """A package's own version parsing (`re`) and torch's probe for triton, on the way to a
    module's guard: the kernels under it are defined."""
    src = r"""
        import re
        import torch
        from torch.utils._triton import has_triton

        def parse_version(text):
            pre = bool(re.search(r"(git|dev)", text))
            m = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
            major, minor, patch = map(int, m.groups())
            return [major, minor, -1 if pre else patch]

        PAT = re.compile(r"v(?P<major>\d+)")
        if parse_version("2.9.0.dev20250101") >= parse_version("2.7.0") and has_triton():
            KIND = "kernels"
        else:
            KIND = "none"
        NAMED = PAT.search("tag v12").group("major"), re.sub(r"\s+", "-", "a  b c")
        SPAN = re.search("b+", "abbbc").span()
    """
    files = {"m.py": src}
    assert value(files, "KIND") == "kernels"
    assert value(files, "NAMED") == ("12", "a-b-c")
    assert value(files, "SPAN") == (1, 4)


def test_a_pattern_that_can_backtrack_forever_is_refused():
    files = {"m.py": "import re\nX = re.match(r'(a+)+$', 'a' * 40 + 'b')\n"}
    with pytest.raises(Refused, match="nested repetition"):
        value(files, "X")


def test_a_module_guard_on_unknown_host_code_takes_the_branch_that_runs():
    """`if find_spec("mslk") is not None:` is not a fact of the revision: the body is taken when
    it runs through, else the `else`; either way it is said, never a failure."""
    src = """
        import importlib.util
        import mslk_probe
        if importlib.util.find_spec("mslk") is not None:
            A = 1
        else:
            A = 2
        if mslk_probe.available():
            B = mslk_probe.make()
        else:
            B = 3
    """
    it = interp({"m.py": src})
    assert it.env("m.py").resolve("A") == 1
    assert it.env("m.py").resolve("B") == 3
    assert any("assumed true" in a for a in it.assumptions) and any("assumed false" in a for a in it.assumptions)


def test_a_guarded_body_runs_through_its_own_host_calls():
    """lightning-thunder's `if has_triton_op:` body defines the kernel beside host code (a device
    query, a registration call): what they bind is unreadable where read, the kernel stands; where
    the `else` binds such a name, the `else` is taken as before."""
    src = """
        import mslk_probe
        import triton
        import triton.language as tl

        HAS = mslk_probe.available()
        if HAS:
            DEVICE = triton.runtime.driver.active.get_active_torch_device()

            @triton.jit
            def k(x_ptr):
                tl.store(x_ptr, 1)

            @mslk_probe.op("k")
            def wrapper(x):
                return x

            mslk_probe.register("k", wrapper)
        if HAS:
            C = mslk_probe.make()
        else:
            C = 3
    """
    it = interp({"m.py": src})
    env = it.env("m.py")
    assert env.resolve("k").node.name == "k"
    with pytest.raises(Refused, match="host code"):
        env.resolve("DEVICE")
    assert env.resolve("C") == 3
    assert sum("assumed true" in a for a in it.assumptions) == 1


def test_a_guard_inside_a_function_is_not_guessed():
    src = """
        import mslk_probe
        def f():
            if mslk_probe.available():
                return 1
            return 2
        X = f()
    """
    with pytest.raises(Refused, match="host code"):
        value({"m.py": src}, "X")


def test_a_loop_over_a_dict_of_optional_packages_runs():
    """`for module, package in OPTIONAL.items(): find_spec(module)` under its own `except`: the
    packages read as not installed, as on a machine without them, and the guard is false."""
    src = """
        import importlib.util
        OPTIONAL = {"cutlass": "nvidia-cutlass-dsl", "tvm_ffi": "apache-tvm-ffi"}

        def missing():
            out = []
            for module, package in OPTIONAL.items():
                try:
                    spec = importlib.util.find_spec(module)
                except (ModuleNotFoundError, ValueError):
                    spec = None
                if spec is None:
                    out.append(package)
            return out

        N = len(OPTIONAL.keys()) + sum(1 for _ in OPTIONAL.values())
    """
    assert value({"m.py": src}, "N") == 4


def test_a_lookup_of_a_libdevice_function_through_find_spec_answers_from_triton():
    """A shim that finds a libdevice function wherever this triton keeps it (`find_spec`,
    `module_from_spec`, `spec.loader.exec_module`, `getattr`) reads triton's own modules: the
    first location that exists gives the function; a repository's own module is never loaded so."""
    src = """
        import importlib.util

        def libdevice_find(name):
            locs = ("triton.language.extra.nowhere", "triton.language.extra.libdevice", "triton.language.math")
            for loc in locs:
                if spec := importlib.util.find_spec(loc):
                    module = importlib.util.module_from_spec(spec)
                    assert spec.loader is not None
                    spec.loader.exec_module(module)
                    return getattr(module, name)
            raise ImportError(name)

        rsqrt = libdevice_find("rsqrt")
        MISSING = importlib.util.find_spec("triton.language.extra.nowhere")
    """
    rsqrt = value({"m.py": src}, "rsqrt")
    assert repr(rsqrt) == "triton.language.extra.libdevice.rsqrt"
    assert value({"m.py": src}, "MISSING") is None
    bad = "import importlib.util\nM = importlib.util.module_from_spec(object())\n"
    with pytest.raises(Refused):
        value({"m.py": bad}, "M")


def test_decorators_applied_by_calls_and_config_all_kwargs():
    src = """
        import triton
        import triton.language as tl
        try:
            _interp = triton.knobs.runtime.interpret
        except AttributeError:
            _interp = True
        CFG = triton.Config({"BLOCK": 64}, num_warps=2)
        ALL = CFG.all_kwargs()
        def _k(x_ptr, BLOCK: tl.constexpr):
            pass
        k = triton.autotune(configs=[CFG], key=["n"])(triton.jit(_k, debug=True))
    """
    files = {"m.py": src}
    assert value(files, "_interp") is False
    assert value(files, "ALL") == {"BLOCK": 64, "num_warps": 2, "num_ctas": 1, "num_stages": 3}
    k = value(files, "k")
    assert [getattr(d, "decorator", d).dotted for d in k.decorators] == ["triton.jit", "triton.autotune"]


def test_a_package_importing_its_own_submodule():
    files = {"pkg/__init__.py": "from . import sub\nfrom .sub import *\n", "pkg/sub.py": "X = 3\n",
             "m.py": "import pkg\nY = pkg.sub.X + pkg.X\n"}
    assert value(files, "Y") == 6


def test_a_class_the_evaluator_refuses_does_not_sink_its_neighbours():
    """ColossalAI defines its kernels in `if HAS_TRITON:` beside a `torch.autograd.Function`: the
    class is refused where it is read, and the kernels and constants of the block stand."""
    src = """
        import torch
        HAS_TRITON = True
        if HAS_TRITON:
            BLOCK = 128

            class Combine(torch.autograd.Function):
                pass

            SIZE = BLOCK * 2
    """
    assert value({"m.py": src}, "SIZE") == 256
    with pytest.raises(Refused, match="a class with a base the evaluator does not know"):
        value({"m.py": src}, "Combine")
    inside = src + "\n            ALIAS = Combine\n"
    with pytest.raises(Refused, match="a class with a base"):   # read within the block, still refused
        value({"m.py": inside}, "ALIAS")


def test_a_member_of_an_enum_with_a_str_or_int_base_is_its_value():
    """Fast-LLM's `class ActivationType(str, enum.Enum)` (a kernel compares a constexpr with
    `ActivationType.squared_relu`): the evaluator refused the class for its `str` base. As in
    Python, a member of such an enum (IntEnum and StrEnum too) equals its value; a plain Enum's
    does not."""
    src = """
        import enum

        class Act(str, enum.Enum):
            gelu = "gelu"
            relu = "relu"

        class Level(enum.IntEnum):
            low = 1
            high = 2

        class Plain(enum.Enum):
            a = "a"

        SAME = Act.relu == "relu"
        VALUE = Act.gelu.value
        NEXT = Level.high + 1
        PLAIN = Plain.a == "a"
    """
    assert value({"m.py": src}, "SAME") is True
    assert value({"m.py": src}, "VALUE") == "gelu"
    assert value({"m.py": src}, "NEXT") == 3
    assert value({"m.py": src}, "PLAIN") is False
