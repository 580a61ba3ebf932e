"""specs.py: resolve() from a hand-made Declared (what importing a kernel reveals) and config."""

from __future__ import annotations

import json

import pytest

from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.params import Param
from ptxdiff.repo_config import KernelConfig, SpecConfig, parse
from ptxdiff.specs import guesses
from ptxdiff.specs.plan import Plan
from ptxdiff.specs.resolve import (
    DEFAULT_NUM_STAGES,
    DEFAULT_NUM_WARPS,
    Declared,
    SpecError,
    resolve,
)

KID = "ops/norm.py::norm_kernel"
KEY = f'[tool.ptxdiff.kernels."{KID}"]'


def kernel(*params: tuple[str, bool, str | None]) -> Kernel:
    return Kernel(id=KID, path="ops/norm.py", name="norm_kernel", module="ops.norm", lineno=10,
                  fingerprint="0" * 64, params=tuple(Param(*p) for p in params), paths=frozenset({"ops/norm.py"}))


K = kernel(("x_ptr", False, "*fp32"), ("out_ptr", False, "*fp32"), ("n", False, "i32"), ("eps", False, "fp32"),
           ("BLOCK", True, None), ("EVEN", True, None))


def declared(defaults=None, autotune=(), heuristics=None, params=None, constexprs=None) -> Declared:
    return Declared(
        params=params or ("x_ptr", "out_ptr", "n", "eps", "BLOCK", "EVEN"),
        constexpr_params=frozenset(constexprs or {"BLOCK", "EVEN"}),
        defaults={"BLOCK": 1024, "EVEN": False} if defaults is None else defaults,
        autotune=tuple(a if len(a) == 4 else (*a, {}) for a in autotune),   # (kwargs, warps, stages, options)
        heuristics=heuristics or {},
    )


SIG = (("x_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("eps", "fp32"), ("BLOCK", "constexpr"),
       ("EVEN", "constexpr"))


def test_defaults():
    (spec,) = resolve(K, declared(), KernelConfig())
    assert (spec.signature, spec.constexprs) == (SIG, (("BLOCK", 1024), ("EVEN", False)))
    assert (spec.num_warps, spec.num_stages) == (DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES) == (4, 3)
    assert spec.label == "BLOCK=1024 EVEN=False w4 s3"
    assert spec.divisible == ("x_ptr", "out_ptr")  # pointers: 16-byte aligned, as torch allocates
    # the types were inferred from names and use: guesses, and said to be
    assert spec.source == "guessed"
    assert spec.guessed == tuple(guesses.type_of(p, t) for p, t in SIG[:4])
    assert spec.detail().as_json()["guessed"] == {"x_ptr:": "*fp32", "out_ptr:": "*fp32", "n:": "i32", "eps:": "fp32"}
    typed = KernelConfig(base=SpecConfig(signature=dict(SIG[:4])))
    (spec,) = resolve(K, declared(), typed)
    assert spec.source == "config" and spec.guessed == ()


def test_detail_and_key():
    (spec,) = resolve(K, declared(), KernelConfig())
    d = spec.detail().as_json()
    assert {k: d[k] for k in ("signature", "constexprs", "num_warps", "num_stages", "divisible_by_16", "source")} == {
        "signature": dict(SIG), "constexprs": {"BLOCK": 1024, "EVEN": False}, "num_warps": 4, "num_stages": 3,
        "divisible_by_16": ["x_ptr", "out_ptr"], "source": "guessed"}
    json.dumps(d)
    (again,) = resolve(K, declared(), KernelConfig())
    assert spec.key == again.key
    (other,) = resolve(K, declared(defaults={"BLOCK": 512, "EVEN": False}), KernelConfig())
    assert other.key != spec.key


def test_autotune_gives_one_spec_per_config():
    configs = [({"BLOCK": 128}, 4, 2), ({"BLOCK": 256}, 8, 3), ({"BLOCK": 512}, None, None)]
    specs = resolve(K, declared(autotune=configs), KernelConfig())
    assert [(dict(s.constexprs)["BLOCK"], s.num_warps, s.num_stages) for s in specs] == [
        (128, 4, 2), (256, 8, 3), (512, DEFAULT_NUM_WARPS, DEFAULT_NUM_STAGES)]
    assert all(dict(s.constexprs)["EVEN"] is False for s in specs)  # untouched defaults stay


def test_autotune_supplies_a_constexpr_without_default():
    specs = resolve(K, declared(defaults={"EVEN": True}, autotune=[({"BLOCK": 64}, 2, 1)]), KernelConfig())
    assert [dict(s.constexprs) for s in specs] == [{"BLOCK": 64, "EVEN": True}]


def test_duplicate_configs_collapse():
    configs = [({"BLOCK": 128}, 4, 2), ({"BLOCK": 128}, 4, 2)]
    assert len(resolve(K, declared(autotune=configs), KernelConfig())) == 1


def test_config_overrides_defaults_autotune_and_inference():
    cfg = parse({"kernels": {KID: {"signature": {"x_ptr": "*fp16", "eps": "fp64"}, "constexprs": {"EVEN": True},
                                   "num_warps": 2}}}, "pyproject.toml").for_kernel(KID)
    configs = [({"BLOCK": 128}, 4, 2), ({"BLOCK": 256}, 8, 3)]
    specs = resolve(K, declared(autotune=configs), cfg)
    assert [(dict(s.constexprs), s.num_warps, s.num_stages) for s in specs] == [
        ({"BLOCK": 128, "EVEN": True}, 2, 2), ({"BLOCK": 256, "EVEN": True}, 2, 3)]
    assert dict(specs[0].signature)["x_ptr"] == "*fp16"
    assert dict(specs[0].signature)["eps"] == "fp64"
    assert dict(specs[0].signature)["out_ptr"] == "*fp32"  # not named: inferred


def test_config_specs_replace_autotune():
    cfg = KernelConfig(base=SpecConfig(constexprs={"EVEN": True}, num_stages=4),
                       specs=(SpecConfig(constexprs={"BLOCK": 64}), SpecConfig(constexprs={"BLOCK": 2048}, num_warps=16)))
    specs = resolve(K, declared(autotune=[({"BLOCK": 128}, 4, 2)]), cfg)
    assert [(dict(s.constexprs), s.num_warps, s.num_stages) for s in specs] == [
        ({"BLOCK": 64, "EVEN": True}, 4, 4), ({"BLOCK": 2048, "EVEN": True}, 16, 4)]


def test_heuristics_computed_from_known_constexprs():
    heur = {"EVEN": lambda args: args["BLOCK"] % 256 == 0}
    specs = resolve(K, declared(autotune=[({"BLOCK": 128}, 4, 2), ({"BLOCK": 512}, 4, 2)], heuristics=heur),
                    KernelConfig())
    assert [dict(s.constexprs)["EVEN"] for s in specs] == [False, True]


def test_heuristic_overrides_default_but_not_config():
    heur = {"EVEN": lambda args: True}
    (spec,) = resolve(K, declared(heuristics=heur), KernelConfig())
    assert dict(spec.constexprs)["EVEN"] is True
    cfg = KernelConfig(base=SpecConfig(constexprs={"EVEN": False}))
    (spec,) = resolve(K, declared(heuristics=heur), cfg)
    assert dict(spec.constexprs)["EVEN"] is False


def test_heuristic_reading_a_runtime_arg_gets_a_representative_value_shown_as_a_guess():
    heur = {"BLOCK": lambda args: 1 << (args["n"] - 1).bit_length(), "EVEN": lambda args: args["x_ptr"] is not None}
    (spec,) = resolve(K, declared(defaults={}, heuristics=heur), KernelConfig())
    assert dict(spec.constexprs) == {"BLOCK": 4096, "EVEN": True}
    assert guesses.read_by("n", "BLOCK", 4096) in spec.guessed
    assert spec.detail().as_json()["guessed"]["n (read by heuristic BLOCK)"] == 4096


def test_sizes_a_heuristic_computes_from_representative_ints_are_shrunk_with_the_guesses():
    """`BLOCK = next_power_of_2(n)` of the stand-in 4096 ran past the cost guard: the shrunk plan
    divides what the heuristic computed, as it divides guessed sizes; a flag stays."""
    heur = {"BLOCK": lambda args: 1 << (args["n"] - 1).bit_length(), "EVEN": lambda args: args["x_ptr"] is not None}
    (spec,) = resolve(K, declared(defaults={}, heuristics=heur), KernelConfig(), Plan().shrunk(heuristic_sizes=True))
    assert dict(spec.constexprs) == {"BLOCK": 1024, "EVEN": True}


def test_heuristic_reading_an_argument_the_kernel_lacks_names_the_key():
    heur = {"BLOCK": lambda args: args["m"]}
    with pytest.raises(SpecError) as info:
        resolve(K, declared(defaults={"EVEN": False}, heuristics=heur), KernelConfig())
    message = str(info.value)
    assert "'m'" in message
    assert f"{KEY} constexprs.BLOCK" in message


def test_heuristic_reading_a_runtime_arg_is_fine_once_configured():
    heur = {"BLOCK": lambda args: args["n"]}
    cfg = KernelConfig(base=SpecConfig(constexprs={"BLOCK": 256}))
    (spec,) = resolve(K, declared(defaults={"EVEN": False}, heuristics=heur), cfg)
    assert dict(spec.constexprs)["BLOCK"] == 256


def test_heuristic_that_raises_names_the_key():
    heur = {"EVEN": lambda args: args["BLOCK"] // 0}
    with pytest.raises(SpecError, match=r"ZeroDivisionError.*constexprs\.EVEN"):
        resolve(K, declared(heuristics=heur), KernelConfig())


def test_unknown_param_type_names_signature_key():
    k = kernel(("x_ptr", False, "*fp32"), ("w", False, None), ("BLOCK", True, None))
    d = declared(params=("x_ptr", "w", "BLOCK"), constexprs={"BLOCK"}, defaults={"BLOCK": 64})
    with pytest.raises(SpecError) as info:
        resolve(k, d, KernelConfig())
    message = str(info.value)
    assert "'w'" in message and f"{KEY} signature.w" in message
    # and setting it fixes it
    (spec,) = resolve(k, d, KernelConfig(base=SpecConfig(signature={"w": "fp16"})))
    assert spec.signature == (("x_ptr", "*fp32"), ("w", "fp16"), ("BLOCK", "constexpr"))


def test_missing_constexpr_default_names_the_key():
    with pytest.raises(SpecError) as info:
        resolve(K, declared(defaults={"EVEN": False}), KernelConfig())
    message = str(info.value)
    assert "'BLOCK'" in message and f"{KEY} constexprs.BLOCK" in message
    (spec,) = resolve(K, declared(defaults={"EVEN": False}), KernelConfig(base=SpecConfig(constexprs={"BLOCK": 32})))
    assert dict(spec.constexprs)["BLOCK"] == 32



def test_every_missing_key_is_named_at_once():
    # one run tells the whole config to write, not one key per run
    k = kernel(("x_ptr", False, "*fp32"), ("w", False, None), ("s", False, None), ("BLOCK", True, None),
               ("EVEN", True, None))
    d = declared(params=("x_ptr", "w", "s", "BLOCK", "EVEN"), defaults={})
    with pytest.raises(SpecError) as info:
        resolve(k, d, KernelConfig())
    message = str(info.value)
    assert "constexprs 'BLOCK', 'EVEN' have no default" in message
    assert "cannot tell the type of parameters 'w', 's'" in message
    assert f"{KEY} constexprs.BLOCK, constexprs.EVEN, signature.w, signature.s" in message
    cfg = KernelConfig(base=SpecConfig(signature={"w": "fp32", "s": "i32"}, constexprs={"BLOCK": 64, "EVEN": True}))
    (spec,) = resolve(k, d, cfg)
    assert spec.signature == (("x_ptr", "*fp32"), ("w", "fp32"), ("s", "i32"), ("BLOCK", "constexpr"),
                              ("EVEN", "constexpr"))

def test_config_naming_a_missing_parameter_is_an_error():
    cfg = KernelConfig(base=SpecConfig(signature={"y_ptr": "*fp32"}, constexprs={"BLOK": 64}))
    with pytest.raises(SpecError) as info:
        resolve(K, declared(), cfg)
    message = str(info.value)
    assert KEY in message and "BLOK" in message and "y_ptr" in message


def test_constexpr_values_keep_their_python_types():
    d = declared(defaults={"BLOCK": 1024, "EVEN": None})
    (spec,) = resolve(K, d, KernelConfig(base=SpecConfig(constexprs={"EVEN": "fast"})))
    assert spec.constexprs == (("BLOCK", 1024), ("EVEN", "fast"))


def test_dtype_constexpr_from_config_string():
    # `X_dtype: tl.constexpr` (Liger's rms_norm backward): TOML has no dtypes, "tl.bfloat16" names one;
    # the spec keeps the string (cache key, labels), the compile worker turns it into the dtype
    import triton.language as tl

    from ptxdiff.compile.invoke import constexpr_value
    d = declared(defaults={"BLOCK": 1024})
    (spec,) = resolve(K, d, KernelConfig(base=SpecConfig(constexprs={"EVEN": "tl.bfloat16"})))
    assert dict(spec.constexprs)["EVEN"] == "tl.bfloat16"
    assert constexpr_value("tl.bfloat16") is tl.bfloat16
    assert constexpr_value("triton.language.float16") is tl.float16
    assert constexpr_value("mean") == "mean" and constexpr_value("tl.not_a_dtype") == "tl.not_a_dtype"
    assert constexpr_value(3) == 3


def test_a_config_s_other_options_are_part_of_its_spec():
    specs = resolve(K, declared(autotune=[({"BLOCK": 128}, 4, 2, {"maxnreg": 128}), ({"BLOCK": 128}, 4, 2, {})]),
                    KernelConfig())
    assert [s.label.endswith("maxnreg=128") for s in specs] == [True, False]
    assert specs[0].key != specs[1].key and specs[0].detail().as_json()["maxnreg"] == 128


def test_the_cap_keeps_every_guessed_combination_before_spreading_over_configs():
    """attorch's p_loss kernels: 6 autotune configs x 4 guessed `p_loss` (0, 1, 2 from its
    comparisons, 16 for none of them), capped at 6. An even spread kept 0 and 16 only, which the old
    side's `if p_loss == 1: / elif p_loss == 2:` does not take, so no spec compiled on both sides;
    every combination is kept once now, the configs taken in turn, then the rest spread."""
    from ptxdiff.specs.resolve import Spec, pick_covering

    specs = [Spec(signature=(("x", "*fp32"), ("p_loss", "constexpr"), ("BLOCK", "constexpr")),
                  constexprs=(("p_loss", mode), ("BLOCK", block)), num_warps=4, num_stages=3,
                  guessed=(guesses.value("p_loss", mode),))
             for mode in (0, 1, 2, 16) for block in (64, 128, 256, 512, 1024, 2048)]
    kept = pick_covering(specs, 6)
    assert len(kept) == 6 and {dict(s.constexprs)["p_loss"] for s in kept} == {0, 1, 2, 16}
    assert len({dict(s.constexprs)["BLOCK"] for s in kept}) >= 4                   # the configs in turn
    assert [specs.index(s) for s in kept] == sorted(specs.index(s) for s in kept)   # in the list's order
    assert pick_covering(specs, 6) == kept and pick_covering(specs[:6], 6) == specs[:6]
