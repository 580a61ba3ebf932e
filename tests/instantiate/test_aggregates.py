"""A repository's `@aggregate` class (triton 3.4+, Gluon): built as triton's own value type, its
constructor taken where it only stores its arguments, refused with its reason otherwise; and a
repository's feature test of triton's names (`getattr(tl, "x", None) or tl.y`)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from helpers import HEADER, commit, make_repo, rows_by_kernel, run_json
from ptxdiff.evaluator.scope import Function
from ptxdiff.instantiate.aggregates import constructor_stores

AGGREGATE = HEADER + """from triton.language.core import _aggregate as aggregate


@aggregate
class Cursor:
    index: tl.tensor
    STEP: tl.constexpr

    INIT

    @triton.jit
    def advance(self):
        return Cursor(self.index + self.STEP, self.STEP)


@triton.jit
def walk(x_ptr, STEP: tl.constexpr):
    cursor = Cursor(tl.program_id(0), STEP).advance()
    tl.store(x_ptr + cursor.index, VALUE)
"""
STORES = """@triton.constexpr_function
    def __init__(self, index, STEP):
        self.index = index
        self.STEP = tl.constexpr(STEP)"""


def init_of(source: str) -> Function:
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return Function(node.name, node, None, None, None)   # type: ignore[arg-type]   # only its node is read


def test_a_constructor_that_stores_its_arguments_is_taken_and_any_other_is_refused_with_its_reason():
    assert constructor_stores(init_of("""
        def __init__(self, index, STEP):
            "a docstring is no statement"
            self.index = index
            self.STEP = gl.constexpr(STEP)
    """)) == (("index", "STEP"), (("index", "index", False), ("STEP", "STEP", True)), ())
    assert "does more than store" in constructor_stores(init_of("""
        def __init__(self, index):
            self.index = index + 1
    """))
    # constants: a module's (Triton-distributed's profiler: `tl.constexpr(NUM_BITS_ID)`) or a literal
    params, stores, constants = constructor_stores(init_of("""
        def __init__(self, index):
            self.index = index
            self.BITS = tl.constexpr(NUM_BITS + 1)
            self.LIMIT = 4096
    """))
    assert params == ("index",) and stores == (("index", "index", False),)
    assert [(f, ast.unparse(e), w) for f, e, w in constants] == [("BITS", "NUM_BITS + 1", True), ("LIMIT", "4096", False)]
    for computes in ("self.BITS = tl.constexpr(index + 1)", "self.BITS = pick(4)", "self.BITS = cfg._hidden",
                     "self.BITS = self.index"):
        assert "does more than store" in constructor_stores(init_of(f"def __init__(self, index):\n    {computes}\n"))
    assert "plain parameters" in constructor_stores(init_of("""
        def __init__(self, index, STEP=4):
            self.index = index
    """))


def kernel(init: str, value: str) -> str:
    return AGGREGATE.replace("INIT", init).replace("VALUE", value)


@pytest.mark.integration
@pytest.mark.parametrize("init", ["", STORES], ids=["triton's constructor", "one that stores its arguments"])
def test_a_kernel_of_an_aggregate_class_is_measured(tmp_path, capsys, init):
    """Before, every such kernel failed: "'module' object is not callable" (the class was read as
    a holder of its members, which triton cannot instantiate)."""
    repo = make_repo(tmp_path, {"k.py": kernel(init, "1.0")})
    commit(repo, "value", {"k.py": kernel(init, "2.0")})
    rows = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::walk"]
    assert [r["verdict"] for r in rows] == ["constants-only"] and not rows[0].get("error")


@pytest.mark.integration
def test_a_constant_an_aggregate_s_constructor_stores_reaches_the_kernel(tmp_path, capsys):
    """Triton-distributed's profiler (32 of its changed kernels): `self.NUM_BITS = tl.constexpr(NUM_BITS)`
    of a module constant beside the stored arguments; refused before ("does more than store its
    arguments"). A change of the constant is a change of the kernel's code."""
    def source(bits: int) -> str:
        return HEADER + f"""from triton.language.core import _aggregate as aggregate

BITS = {bits}


@aggregate
class Tag:
    index: tl.tensor
    SHIFT: tl.constexpr

    @triton.constexpr_function
    def __init__(self, index):
        self.index = index
        self.SHIFT = tl.constexpr(BITS + 1)

    @triton.jit
    def encoded(self):
        return self.index << self.SHIFT


@triton.jit
def walk(x_ptr):
    tl.store(x_ptr, Tag(tl.program_id(0)).encoded())
"""
    repo = make_repo(tmp_path, {"k.py": source(3)})
    commit(repo, "bits", {"k.py": source(7)})
    row, = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::walk"]
    assert row["verdict"] in ("constants-only", "structural") and not row.get("error"), row.get("error")


@pytest.mark.integration
def test_an_aggregate_whose_constructor_computes_fails_saying_why(tmp_path, capsys):
    computes = STORES.replace("self.index = index", "self.index = index * 2")
    repo = make_repo(tmp_path, {"k.py": kernel(computes, "1.0")})
    commit(repo, "value", {"k.py": kernel(computes, "2.0")})
    row, = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::walk"]
    assert row["verdict"] == "unmeasured" and "the aggregate Cursor: its __init__ does more than store" in row["error"]


@pytest.mark.integration
def test_a_feature_test_of_triton_s_names_takes_the_name_this_triton_has(tmp_path, capsys):
    """`getattr(gl, "barrier", None) or gl.thread_barrier` (lmdeploy, across triton 3.7's rename):
    a function of triton's is true; before, "the truth of triton.language.debug_barrier, which is
    host code" left the name unbound and the kernel failed with a NameError."""
    source = HEADER + """_barrier = getattr(tl, "debug_barrier", None) or tl.no_such_barrier
_absent = getattr(tl, "no_such_barrier", None) or tl.debug_barrier


@triton.jit
def k(x_ptr):
    _barrier()
    _absent()
    tl.store(x_ptr, VALUE)
"""
    repo = make_repo(tmp_path, {"k.py": source.replace("VALUE", "1.0")})
    commit(repo, "value", {"k.py": source.replace("VALUE", "2.0")})
    row, = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::k"]
    assert row["verdict"] == "constants-only", row.get("error")


def test_no_field_or_method_of_an_aggregate_is_named_like_python_s_own():
    """What the class stores and carries is read by triton on a real object: a `__class__` field
    or a `__getattr__` method would reach past the language; refused before anything is built."""
    from ptxdiff.evaluator.values import Class, External
    from ptxdiff.instantiate.aggregates import build

    decorated = (External("triton.language.core._aggregate"),)
    unused = lambda *a: pytest.fail("nothing is built")   # noqa: E731
    field = Class("C", {}, decorators=decorated, fields=(("__class__", External("triton.language.tensor")),))
    method = Class("C", {"__getattr__": init_of("def __getattr__(self, name):\n    return name")}, decorators=decorated)
    assert "named like Python's own" in build(field, "m", unused, unused, unused)
    assert "named like Python's own" in build(method, "m", unused, unused, unused)
    assert "does more than store" in constructor_stores(init_of("""
        def __init__(self, x):
            self.__dict__ = x
    """))


@pytest.mark.integration
def test_two_aggregates_of_one_name_in_two_modules_are_two_types(tmp_path, capsys):
    """`a.State` and `b.State`: triton names an aggregate's compiled helpers by its module and
    name, so built under one module name the second was compiled as the first, and a change to
    `b.State.get` read `identical` (the review's reproduction)."""
    def module(op: str) -> str:
        return HEADER + f"""from triton.language.core import _aggregate as aggregate


@aggregate
class State:
    v: tl.tensor

    @triton.jit
    def get(self):
        return self.v {op}
"""
    kernel = HEADER + """import a
import b


@triton.jit
def helper(s):
    return s.get()


@triton.jit
def kern(x_ptr, y_ptr, z_ptr):
    x = tl.load(x_ptr)
    tl.store(y_ptr, helper(a.State(x)))
    tl.store(z_ptr, helper(b.State(x)))
"""
    repo = make_repo(tmp_path, {"a.py": module("+ 1.0"), "b.py": module("* 3.0"), "k.py": kernel})
    commit(repo, "b only", {"b.py": module("* 5.0")})
    row, = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::kern"]
    assert row["verdict"] == "constants-only", row.get("error")


@pytest.mark.integration
def test_triton_s_public_spelling_of_aggregate_and_a_field_s_default(tmp_path, capsys):
    """`@triton.aggregate` (triton 3.9's public name) is the same decorator; a field's default
    (`STEP: tl.constexpr = 2`) reaches triton's own constructor."""
    source = HEADER + """@triton.aggregate
class Cursor:
    index: tl.tensor
    STEP: tl.constexpr = 2

    @triton.jit
    def advance(self):
        return Cursor(self.index + self.STEP)


@triton.jit
def walk(x_ptr):
    cursor = Cursor(tl.program_id(0)).advance()
    tl.store(x_ptr + cursor.index, VALUE)
"""
    repo = make_repo(tmp_path, {"k.py": source.replace("VALUE", "1.0")})
    commit(repo, "value", {"k.py": source.replace("VALUE", "2.0")})
    row, = rows_by_kernel(run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys))["k.py::walk"]
    assert row["verdict"] == "constants-only", row.get("error")


def test_the_truth_of_a_triton_name_is_python_s_only_where_it_cannot_be_false():
    """A function, class or module of triton's is true; a constexpr may be false
    (`tl.core.CONSTEXPR_0`): its truth stays refused, never guessed true."""
    from ptxdiff.evaluator.installed import is_true_object

    assert is_true_object("triton.language.debug_barrier") and is_true_object("triton.language")
    assert not is_true_object("triton.language.core.CONSTEXPR_0")
    assert not is_true_object("triton.language.no_such_name") and not is_true_object("math.pi")
