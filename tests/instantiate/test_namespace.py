"""The stand-ins for triton's modules and math that kernels get instead of the real modules."""

from __future__ import annotations

import collections
import math
import sys
import types

import pytest

from ptxdiff.instantiate import namespace
from ptxdiff.instantiate.scan import RENAMED

tl = pytest.importorskip("triton.language")


@pytest.mark.parametrize(("dotted", "real"), [
    ("triton.language.load", lambda: tl.load),
    ("triton.language.float16", lambda: tl.float16),
    ("triton.language.constexpr", lambda: tl.constexpr),
    ("triton.language.sum", lambda: tl.sum),
    ("triton.language.math.fma", lambda: tl.math.fma),
    ("triton.language.extra.cuda.libdevice.exp", lambda: tl.extra.cuda.libdevice.exp),
    ("triton.language.extra.libdevice.exp", lambda: tl.extra.cuda.libdevice.exp),  # the backend's, as triton swaps it
    ("triton.language.PropagateNan", lambda: tl.PropagateNan),
    ("math.pi", lambda: math.pi),
    ("math.log2", lambda: math.log2),
])
def test_the_language_is_there_by_its_public_names(dotted, real):
    assert namespace.lookup(dotted) == (True, real())


@pytest.mark.parametrize("dotted", [
    "triton.language.core.builtins", "triton.language.core.builtins.exec", "triton.language.core.inspect",
    "triton.language.core.wraps", "triton.language.extra.modules", "triton.language.target_info.driver",
    "triton.language.semantic.TritonSemantic",   # a class with the real triton.language as an attribute
    "triton.language.core._unwrap_if_constexpr", "triton.language.__dict__", "triton.jit", "triton.runtime",
    "triton.runtime.driver.active", "math.__loader__", "os.system", "torch.cuda", "torch.ops",
    "torch.finfo.__new__", "torch.float16.__class__",
])
def test_what_leads_elsewhere_is_not(dotted):
    assert namespace.lookup(dotted) == (False, None)


def test_torch_in_a_kernel_answers_dtype_limits_from_a_table():
    """The stand-in holds torch's dtype names and finfo/iinfo (classes, as triton requires of
    what a kernel calls), with torch's own values, and nothing else."""
    from ptxdiff.instantiate import torch_standin

    found, torch_ = namespace.lookup("torch")
    assert found and sorted(n for n in vars(torch_) if not n.startswith("_"))[:3] == ["bfloat16", "double", "finfo"]
    assert torch_.finfo(torch_.float8_e4m3fn).max == 448.0 and torch_.finfo(torch_.float16).tiny == 6.103515625e-05
    assert torch_.iinfo(torch_.int8).min == -128 and torch_.finfo().eps == 1.1920928955078125e-07
    with pytest.raises(TypeError):
        torch_.finfo(torch_.int32)
    assert isinstance(torch_.finfo, type) and torch_.finfo is torch_standin.finfo


def test_triton_top_level_has_what_kernel_bodies_use():
    found, top = namespace.lookup("triton")
    assert found and isinstance(top, types.ModuleType)
    assert {n for n in vars(top) if not n.startswith("__")} <= {*namespace.TRITON_TOP, "experimental"}
    assert {"language", "cdiv", "next_power_of_2"} <= set(vars(top))
    # of `triton.experimental`, Gluon's language alone: its layouts, builtins and nvidia modules
    experimental = vars(top)["experimental"]
    assert {n for n in vars(experimental) if not n.startswith("__")} == {"gluon"}
    assert {n for n in vars(experimental.gluon) if not n.startswith("__")} == {"language"}
    found, layout = namespace.lookup("triton.experimental.gluon.language.BlockedLayout")
    assert found and layout.__name__ == "BlockedLayout"
    assert namespace.lookup("triton.experimental.gluon.language.nvidia.ampere.async_copy.commit_group")[0]
    assert namespace.lookup("triton.experimental.gluon.language._semantic") == (False, None)
    assert namespace.lookup("triton.experimental.gluon.jit") == (False, None)


def test_no_chain_of_public_attributes_reaches_a_real_module():
    """From the stand-ins, walking public attribute names (but not what scan.py refuses) for a few
    steps finds no real module, no mapping and no plain Python function outside triton: the
    objects kernels can reach are the language's."""
    denied = namespace.jit_internals()
    helpers = namespace.language_helpers()   # one underscore, allowed as triton's own (scan.refusal)
    todo = collections.deque([("triton", namespace.lookup("triton")[1], 0), ("math", namespace.lookup("math")[1], 0),
                              ("gl", namespace.lookup("triton.experimental.gluon.language")[1], 0)])
    seen: set[int] = set()
    bad = []
    while todo:
        path, value, depth = todo.popleft()
        if id(value) in seen or isinstance(value, (int, float, str, bytes, bool, type(None))):
            continue
        seen.add(id(value))
        if isinstance(value, types.ModuleType):
            if sys.modules.get(value.__name__) is value:
                bad.append(path)
                continue
        elif isinstance(value, dict) or isinstance(value, types.FunctionType) and \
                not value.__module__.startswith("triton.") or value in (exec, eval, open, __import__):
            bad.append(path)
            continue
        if depth < 4:
            for name in dir(value):
                if (not name.startswith("_") or name in helpers) and name not in denied:
                    try:
                        todo.append((f"{path}.{name}", getattr(value, name), depth + 1))
                    except Exception:
                        continue
    assert len(seen) > 1000 and bad == []


def test_stand_ins_are_plain_modules_with_names_triton_does_not_swap():
    tl_stand_in = namespace.lookup("triton.language")[1]
    assert type(tl_stand_in) is types.ModuleType and tl_stand_in is not tl
    names = set()
    todo = [tl_stand_in]
    while todo:
        module = todo.pop()
        if module.__name__ in names:
            continue
        names.add(module.__name__)
        private = {n for n, v in vars(module).items() if n.startswith("_") and not n.startswith("__")
                   and type(v).__module__ != "triton.runtime.jit"   # triton's own jit functions (`_log2`) are kernels'
                   and getattr(v, "__triton_builtin__", False) is not True}   # and its builtins (`_reduce_with_indices`)
        assert private <= (set(RENAMED) if module.__name__ == "triton.language" else set()), module.__name__
        todo += [v for v in vars(module).values() if isinstance(v, types.ModuleType)]
    assert "triton.language.extra.cuda.libdevice" in names
    assert not any(namespace.reserved(n) for n in names) and namespace.reserved("triton.language.extra.libdevice")


def test_a_withheld_name_is_told_apart_from_a_missing_one():
    stand_in = namespace.lookup("triton.language")[1]
    assert namespace.withheld(stand_in, ["core", "builtins", "exec"]) == "triton.language.core.builtins"
    assert namespace.withheld(stand_in, ["no_such_builtin"]) is None      # triton's own error to give
    assert namespace.withheld(stand_in, ["load"]) is None
    assert namespace.withheld(tl, ["core", "builtins"]) is None            # not a stand-in


def test_the_jit_object_internals_cover_what_hands_out_globals_and_spare_what_values_have():
    denied = namespace.jit_internals()
    assert {"fn", "get_capture_scope", "used_global_vals", "run", "warmup", "device_caches"} <= denied
    assert not denied & {"type", "dtype", "shape", "value", "to", "T", "handle", "numel", "element_ty"}


def test_language_helpers_are_the_private_jit_functions_of_triton_s_language():
    """Triton's and Gluon's: module-level jit and constexpr functions and builtins, and the builtin
    methods of their language classes (Gluon's `shared_memory_descriptor._keep_alive`)."""
    import sys

    helpers = namespace.language_helpers()
    assert "_sum_combine" in helpers or not hasattr(tl.standard, "_sum_combine")
    assert "_unwrap_if_constexpr" not in helpers     # a plain Python function of triton
    assert "_keep_alive" in helpers and "_flatten_ir" not in helpers   # a builtin method; a plain one
    languages = [m for name, m in sys.modules.items() if m is not None and name.startswith(namespace.LANGUAGES)]
    for name in helpers:
        assert name.startswith("_") and not name.startswith("__")
        assert any(name in vars(m) or any(isinstance(c, type) and name in vars(c) for c in vars(m).values())
                   for m in languages), name


@pytest.mark.parametrize("wrapped", [True, False])
def test_pure_helpers_are_constexpr_functions_where_triton_has_them_else_plain(monkeypatch, wrapped):
    """triton 3.6 and later call `get_int_dtype` or `_log2` as constexpr functions; before 3.6
    there are none, and kernels (and triton's own sort) call the plain functions."""
    import triton

    def _log2(i):
        return i.bit_length() - 1

    def get_int_dtype(bitwidth, signed):
        return bitwidth, signed

    def _host_only():
        return 0

    real = types.ModuleType(f"triton.language.helpers_{wrapped}")
    real._log2, real.get_int_dtype, real._host_only = _log2, get_int_dtype, _host_only
    if not wrapped:
        monkeypatch.delattr(triton, "constexpr_function")
    stand_in = namespace.proxy(real)
    assert not hasattr(stand_in, "_host_only")
    for name, fn in (("_log2", _log2), ("get_int_dtype", get_int_dtype)):
        held = getattr(stand_in, name)
        assert (held is fn) is not wrapped and (held is fn or isinstance(held, triton.runtime.jit.ConstexprFunction))
