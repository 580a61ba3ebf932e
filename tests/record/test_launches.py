"""The recorded-launch file (ptxdiff/recorded.py): parsing, errors that name file:line, the
canonical text, combining and merging recordings, and matching kernels by parameter names."""

from __future__ import annotations

import json

import pytest

from ptxdiff.errors import ConfigError
from ptxdiff.record import launches as recorded

GELU = {"kernel": "ops/gelu.py::gelu_kernel", "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
        "signature": {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}, "constexprs": {"BLOCK": 1024},
        "divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 4, "num_stages": 3, "options": {},
        "autotune": None, "via": "interpreter", "count": 12}


def line(**changes) -> str:
    obj = {**GELU, **changes}
    return json.dumps({k: obj[k] for k in obj if obj[k] is not ...})


def launch(**changes) -> recorded.Launch:
    return recorded.from_json({**GELU, **changes}, "test")


def test_a_line_becomes_a_launch_and_back_byte_for_byte():
    text = line() + "\n"
    parsed = recorded.parse(text, "f")
    (only,) = parsed["ops/gelu.py::gelu_kernel"]
    assert only.params == ("x_ptr", "out_ptr", "n", "BLOCK")
    assert only.signature == {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}
    assert only.constexprs == {"BLOCK": 1024}
    assert only.divisible == ("x_ptr", "out_ptr", "n")
    assert (only.num_warps, only.num_stages, only.count, only.autotune) == (4, 3, 12, None)
    assert recorded.dumps(parsed) == text


def test_canonical_text_fixes_key_and_entry_order():
    shuffled = {k: GELU[k] for k in reversed(recorded.FIELDS)}
    shuffled["signature"] = {"n": "i32", "out_ptr": "*fp16", "x_ptr": "*fp16"}
    shuffled["divisible_by_16"] = ["n", "x_ptr", "out_ptr"]
    shuffled["options"] = {"num_ctas": 2, "maxnreg": 64}
    out = recorded.dumps(recorded.parse(json.dumps(shuffled), "f"))
    assert list(json.loads(out)) == list(recorded.FIELDS)
    assert out.startswith('{"kernel": "ops/gelu.py::gelu_kernel", "params": ["x_ptr", "out_ptr", "n", "BLOCK"], '
                          '"signature": {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}, "constexprs": '
                          '{"BLOCK": 1024}, "divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 4, '
                          '"num_stages": 3, "options": {"maxnreg": 64, "num_ctas": 2}, "autotune": null, ')


def test_lines_sort_by_kernel_then_most_frequent_then_spec():
    other = {**GELU, "kernel": "a/first.py::k", "count": 1}
    rare = {**GELU, "constexprs": {"BLOCK": 128}, "count": 1}
    tie = {**GELU, "constexprs": {"BLOCK": 256}, "count": 1}
    text = "\n".join(json.dumps(o) for o in (rare, GELU, tie, other)) + "\n"
    out = recorded.dumps(recorded.parse(text, "f")).splitlines()
    assert [(json.loads(x)["kernel"], json.loads(x)["constexprs"], json.loads(x)["count"]) for x in out] == [
        ("a/first.py::k", {"BLOCK": 1024}, 1),
        ("ops/gelu.py::gelu_kernel", {"BLOCK": 1024}, 12),
        ("ops/gelu.py::gelu_kernel", {"BLOCK": 128}, 1),
        ("ops/gelu.py::gelu_kernel", {"BLOCK": 256}, 1),
    ]


def test_specialised_constants_and_tuple_elements_are_valid():
    obj = {**GELU, "params": ["t", "n", "bias", "BLOCK"], "signature": {"t": ["*fp16", "constexpr", "i32"]},
           "constexprs": {"t[1]": 1, "n": 1, "bias": None, "BLOCK": 64}, "divisible_by_16": ["t[2]", "t[0]"]}
    one = recorded.from_json(obj, "f")
    assert one.divisible == ("t[0]", "t[2]")
    assert list(one.constexprs) == ["t[1]", "n", "bias", "BLOCK"]


@pytest.mark.parametrize("text, message", [
    ("not json", "f:2: not JSON"),
    ("[1, 2]", "f:2: not a JSON object"),
    (line(count=...), "f:2: missing key 'count'"),
    (json.dumps({**GELU, "extra": 1}), "f:2: unknown key 'extra'"),
    (line(kernel="gelu_kernel"), "f:2: 'kernel' must be an id"),
    (line(params=["x_ptr", "x_ptr"]), "f:2: 'params' must list"),
    (line(signature={"x_ptr": "*fp16", "out_ptr": 3, "n": "i32"}), "f:2: 'signature' must map"),
    (line(constexprs={}), "f:2: parameter 'BLOCK' must be in exactly one"),
    (line(constexprs={"BLOCK": 1, "n": 1}), "f:2: parameter 'n' must be in exactly one"),
    (line(constexprs={"BLOCK": 1, "y": 1}), "f:2: 'constexprs' names 'y'"),
    (line(divisible_by_16=["BLOCK"]), "f:2: 'divisible_by_16' names 'BLOCK'"),
    (line(num_warps=0), "f:2: 'num_warps' must be an integer >= 1"),
    (line(num_stages=True), "f:2: 'num_stages' must be an integer >= 0"),
    (line(autotune="best"), "f:2: 'autotune' must be null"),
    (line(count=0), "f:2: 'count' must be an integer >= 1"),
    ("<<<<<<< HEAD", "f:2: git merge conflict marker"),
    (line(), "f:2: the same spec as line 1"),
    (line(params=["x_ptr", "out_ptr", "n", "BLOCK_SIZE"], constexprs={"BLOCK_SIZE": 1}),
     "f:2: ops/gelu.py::gelu_kernel has params ['x_ptr', 'out_ptr', 'n', 'BLOCK_SIZE'] here but "
     "['x_ptr', 'out_ptr', 'n', 'BLOCK'] on line 1"),
])
def test_a_bad_line_is_one_error_naming_file_and_line(text, message):
    with pytest.raises(ConfigError) as e:
        recorded.parse(line(count=3) + "\n" + text + "\n", "f")
    assert str(e.value).startswith(message)
    assert "\n" not in str(e.value)


def test_blank_lines_are_fine():
    assert recorded.parse("\n" + line() + "\n\n", "f")["ops/gelu.py::gelu_kernel"][0].count == 12


def test_load_reads_a_snapshot_like_config_load():
    files = {recorded.DEFAULT_PATH: (line() + "\n").encode()}
    got = recorded.load(files.__getitem__, files.__contains__)
    assert list(got) == ["ops/gelu.py::gelu_kernel"]
    assert recorded.load(files.__getitem__, lambda p: False) == {}
    bad = {recorded.DEFAULT_PATH: b"\xff\xfe"}
    with pytest.raises(ConfigError, match=r"^\.ptxdiff/launches\.jsonl: not UTF-8 text$"):
        recorded.load(bad.__getitem__, bad.__contains__)
    broken = {recorded.DEFAULT_PATH: b"{}\n"}
    with pytest.raises(ConfigError, match=r"^\.ptxdiff/launches\.jsonl:1: missing key 'kernel'$"):
        recorded.load(broken.__getitem__, broken.__contains__)


def test_combine_adds_counts_and_keeps_the_most_frequent():
    a = [launch(count=2, constexprs={"BLOCK": b}) for b in (64, 128, 256, 512)]
    got = recorded.combine([*a, launch(count=5, constexprs={"BLOCK": 64}), launch(count=1, constexprs={"BLOCK": 512})],
                           keep=2)
    kept = got["ops/gelu.py::gelu_kernel"]
    assert [(x.constexprs["BLOCK"], x.count) for x in kept] == [(64, 7), (512, 3)]


def test_a_new_recording_replaces_the_kernels_it_saw_and_keeps_the_others():
    old = recorded.combine([launch(count=9), launch(kernel="ops/other.py::k", count=4)])
    new = recorded.combine([launch(count=1, constexprs={"BLOCK": 64})])
    merged = recorded.replace(old, new)
    assert [x.count for x in merged["ops/other.py::k"]] == [4]
    assert [x.constexprs for x in merged["ops/gelu.py::gelu_kernel"]] == [{"BLOCK": 64}]


def test_match_by_id_and_parameter_names():
    launches = recorded.combine([launch()])
    kid = "ops/gelu.py::gelu_kernel"
    assert recorded.match(launches, kid, ["x_ptr", "out_ptr", "n", "BLOCK"]) == (launches[kid], None)
    assert recorded.match(launches, "ops/gelu.py::other", ["x"]) == ((), None)

    found, message = recorded.match(launches, kid, ["x_ptr", "out_ptr", "n_elements", "BLOCK"])
    assert found == () and "renamed n -> n_elements" in message and kid in message
    found, message = recorded.match(launches, kid, ["x_ptr", "out_ptr", "n", "BLOCK", "HAS_BIAS"])
    assert found == () and "here, not recorded: HAS_BIAS" in message and "recorded, not here" not in message
    found, message = recorded.match(launches, kid, ["x_ptr", "n", "BLOCK"])
    assert found == () and "recorded, not here: out_ptr" in message and "here, not recorded" not in message
    found, message = recorded.match(launches, kid, ["out_ptr", "x_ptr", "n", "BLOCK"])
    assert found == () and "same names in another order" in message
    found, message = recorded.match(launches, kid, ["x_ptr", "n", "out_ptr", "BLOCK", "bias"])
    assert found == () and "here, not recorded: bias" in message
