"""repo_config.py: `[tool.ptxdiff]` / ptxdiff.toml parsing, strict validation, lookups."""

from __future__ import annotations

import pytest

from ptxdiff.errors import ConfigError
from ptxdiff.repo_config import Config, KernelConfig, SpecConfig, load, parse, unmatched_kernels
from ptxdiff.verdict import DEFAULT_BLOCK


def load_files(files: dict[str, str]) -> Config:
    data = {k: v.encode() for k, v in files.items()}
    return load(data.__getitem__, data.__contains__)


def error_of(files: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        load_files(files)
    return str(info.value)


FULL = """
[project]
name = "demo"

[tool.ptxdiff]
targets = ["sm_90", "sm_80"]
include = ["ops/*.py"]
exclude = ["ops/test_*.py"]
block = ["structural", "failed", "reordered"]
timeout = 60

[tool.ptxdiff.kernels."ops/gelu.py::gelu_kernel"]
signature = { x_ptr = "*fp16", n = "i32" }
constexprs = { BLOCK = 1024 }
num_warps = 8
num_stages = 2

[tool.ptxdiff.kernels.softmax_kernel]
specs = [
    { constexprs = { BLOCK = 128 }, num_warps = 4 },
    { constexprs = { BLOCK = 256 }, num_warps = 8, signature = { x_ptr = "*bf16" } },
]
"""


def test_no_config_file_gives_defaults():
    cfg = load_files({})
    assert cfg == Config()
    assert cfg.source == "defaults"
    assert cfg.targets == (90,)
    assert cfg.block == DEFAULT_BLOCK == ("structural", "failed")
    assert cfg.include == () and cfg.exclude == () and cfg.kernels == {}


def test_pyproject_without_section_gives_defaults():
    assert load_files({"pyproject.toml": '[project]\nname = "x"\n'}) == Config()
    assert load_files({"pyproject.toml": '[tool.black]\nline-length = 100\n'}) == Config()


def test_full_pyproject():
    cfg = load_files({"pyproject.toml": FULL})
    assert cfg.source == "pyproject.toml [tool.ptxdiff]"
    assert cfg.targets == (80, 90)                    # in order of number
    assert cfg.include == ("ops/*.py",) and cfg.exclude == ("ops/test_*.py",)
    assert cfg.block == ("structural", "failed", "reordered")
    assert cfg.timeout == 60.0 and isinstance(cfg.timeout, float)
    gelu = cfg.kernels["ops/gelu.py::gelu_kernel"]
    assert gelu.base == SpecConfig({"x_ptr": "*fp16", "n": "i32"}, {"BLOCK": 1024}, 8, 2)
    assert gelu.specs == ()
    soft = cfg.kernels["softmax_kernel"]
    assert soft.base == SpecConfig()
    assert soft.specs == (SpecConfig({}, {"BLOCK": 128}, 4, None),
                          SpecConfig({"x_ptr": "*bf16"}, {"BLOCK": 256}, 8, None))


def test_ptxdiff_toml_takes_the_same_keys_and_wins_over_pyproject():
    cfg = load_files({"ptxdiff.toml": 'targets = ["sm_86"]\n', "pyproject.toml": FULL})
    assert cfg.targets == (86,)
    assert cfg.source == "ptxdiff.toml"
    assert cfg.kernels == {}


def test_string_is_accepted_for_a_one_element_list():
    cfg = load_files({"ptxdiff.toml": 'targets = "sm_80"\ninclude = "ops/*.py"\n'})
    assert cfg.targets == (80,) and cfg.include == ("ops/*.py",)


def test_invalid_toml_names_the_file():
    message = error_of({"pyproject.toml": "[tool.ptxdiff\ntargets = 1\n"})
    assert message.startswith("pyproject.toml: invalid TOML")


def test_non_utf8_config_names_the_file():
    data = {"ptxdiff.toml": b'targets = ["sm_90"] # \xff\n'}
    with pytest.raises(ConfigError, match="ptxdiff.toml"):
        load(data.__getitem__, data.__contains__)


@pytest.mark.parametrize("body,key", [
    ("bogus = 1", "'bogus'"),
    ("target = ['sm_90']", "'target'"),
    ('[tool.ptxdiff.kernels."ops/a.py::k"]\nnum_warp = 4', """'kernels."ops/a.py::k".num_warp'"""),
    ('[tool.ptxdiff.kernels.k]\nspecs = [{ num_warps = 4 }, { blocks = 1 }]', """'kernels."k".specs[1].blocks'"""),
    ('[tool.ptxdiff.kernels.k]\nspecs = [{ specs = [] }]', """'kernels."k".specs[0].specs'"""),
])
def test_unknown_keys_are_errors_naming_file_and_key(body, key):
    message = error_of({"pyproject.toml": "[tool.ptxdiff]\n" + body + "\n"})
    assert message.startswith("pyproject.toml [tool.ptxdiff]: ")
    assert key in message
    assert "unknown" in message


def test_unknown_key_in_ptxdiff_toml_names_that_file():
    message = error_of({"ptxdiff.toml": "colour = true\n"})
    assert message.startswith("ptxdiff.toml: ") and "'colour'" in message


@pytest.mark.parametrize("body,key", [
    ("targets = 90", "'targets'"),
    ("targets = [90]", "'targets'"),
    ("targets = []", "'targets'"),
    ("include = [1, 2]", "'include'"),
    ("exclude = { a = 1 }", "'exclude'"),
    ("python_path = 3", "'python_path'"),
    ("block = 'structural'\ntimeout = '60'", "'timeout'"),
    ("timeout = 0", "'timeout'"),
    ("timeout = -5", "'timeout'"),
    ("timeout = true", "'timeout'"),
    ("kernels = 3", "'kernels'"),
    ('kernels = { k = 3 }', """'kernels."k"'"""),
    ('[tool.ptxdiff.kernels.k]\nnum_warps = 0', """'kernels."k".num_warps'"""),
    ('[tool.ptxdiff.kernels.k]\nnum_warps = "4"', """'kernels."k".num_warps'"""),
    ('[tool.ptxdiff.kernels.k]\nnum_stages = true', """'kernels."k".num_stages'"""),
    ('[tool.ptxdiff.kernels.k]\nnum_warps = 4.0', """'kernels."k".num_warps'"""),
    ('[tool.ptxdiff.kernels.k]\nsignature = { x_ptr = 1 }', """'kernels."k".signature'"""),
    ('[tool.ptxdiff.kernels.k]\nsignature = ["*fp32"]', """'kernels."k".signature'"""),
    ('[tool.ptxdiff.kernels.k]\nconstexprs = 3', """'kernels."k".constexprs'"""),
    ('[tool.ptxdiff.kernels.k]\nspecs = { num_warps = 4 }', """'kernels."k".specs'"""),
    ('[tool.ptxdiff.kernels.k]\nspecs = [4]', """'kernels."k".specs'"""),
    ('[tool.ptxdiff.kernels.k]\nspecs = [{ num_warps = -1 }]', """'kernels."k".specs[0].num_warps'"""),
])
def test_wrong_types_are_errors_naming_file_and_key(body, key):
    message = error_of({"pyproject.toml": "[tool.ptxdiff]\n" + body + "\n"})
    assert message.startswith("pyproject.toml [tool.ptxdiff]: ")
    assert key in message


def test_section_that_is_not_a_table():
    message = error_of({"pyproject.toml": "[tool]\nptxdiff = 3\n"})
    assert "pyproject.toml" in message and "tool.ptxdiff" in message


@pytest.mark.parametrize("target", ["sm_75", "gfx90a", "sm_9x"])
def test_bad_target_is_an_error_naming_file_key_and_value(target):
    message = error_of({"pyproject.toml": f'[tool.ptxdiff]\ntargets = ["sm_90", "{target}"]\n'})
    assert message.startswith("pyproject.toml [tool.ptxdiff]: key 'targets'")
    assert target in message


def test_unknown_verdict_in_block():
    message = error_of({"pyproject.toml": '[tool.ptxdiff]\nblock = ["structural", "structral"]\n'})
    assert message.startswith("pyproject.toml [tool.ptxdiff]: key 'block'")
    assert "structral" in message and "constants-only" in message


def test_every_verdict_may_be_blocked():
    block = ["failed", "added", "removed", "structural", "reordered", "constants-only", "identical"]
    cfg = parse({"block": block}, "x.toml")
    assert cfg.block == tuple(block)


def test_config_error_is_a_usage_exit():
    assert ConfigError.exit_code == 2


def test_for_kernel_by_id_by_bare_name_and_default():
    cfg = load_files({"pyproject.toml": FULL})
    gelu = cfg.for_kernel("ops/gelu.py::gelu_kernel")
    assert gelu.base.num_warps == 8
    assert cfg.for_kernel("other/place.py::softmax_kernel") is cfg.kernels["softmax_kernel"]
    assert cfg.for_kernel("ops/gelu.py::unknown") == KernelConfig()
    # a bare name does not match by id suffix of another kernel
    assert cfg.for_kernel("ops/other.py::gelu_kernel") == KernelConfig()


def test_for_kernel_prefers_the_id_over_the_bare_name():
    cfg = parse({"kernels": {"k": {"num_warps": 2}, "a.py::k": {"num_warps": 8}}}, "x.toml")
    assert cfg.for_kernel("a.py::k").base.num_warps == 8
    assert cfg.for_kernel("b.py::k").base.num_warps == 2


def test_selects_with_include_and_exclude():
    cfg = load_files({"pyproject.toml": FULL})
    assert cfg.selects("ops/gelu.py")
    assert not cfg.selects("ops/test_gelu.py")   # excluded
    assert not cfg.selects("models/net.py")      # not included
    everything = Config()
    assert everything.selects("anything/at/all.py")
    only_exclude = parse({"exclude": ["tests/*", "*_bench.py"]}, "x.toml")
    assert only_exclude.selects("ops/gelu.py")
    assert not only_exclude.selects("tests/test_x.py")
    assert not only_exclude.selects("ops/gelu_bench.py")


def test_kernel_config_key_is_stable_and_sensitive():
    cfg = load_files({"pyproject.toml": FULL})
    again = load_files({"pyproject.toml": FULL})
    gelu = cfg.for_kernel("ops/gelu.py::gelu_kernel")
    assert gelu.key() == again.for_kernel("ops/gelu.py::gelu_kernel").key()
    changed = load_files({"pyproject.toml": FULL.replace("num_warps = 8\nnum_stages = 2",
                                                         "num_warps = 4\nnum_stages = 2")})
    assert changed.for_kernel("ops/gelu.py::gelu_kernel").key() != gelu.key()
    assert KernelConfig().key() != gelu.key()


def test_targets_are_kept_once_each_in_order_of_number():
    cfg = load_files({"ptxdiff.toml": 'targets = ["sm_100", "sm_90", "sm_80", "sm_90"]\n'})
    assert cfg.targets == (80, 90, 100)


def test_timing_floor_is_one_percent_unless_set():
    assert Config().min_effect == 0.01
    assert load_files({"ptxdiff.toml": "min_effect = 0\n"}).min_effect == 0.0
    assert load_files({"ptxdiff.toml": "min_effect = 0.05\n"}).min_effect == 0.05


def test_unmatched_kernel_entries_name_the_nearest_id():
    cfg = load_files({"ptxdiff.toml": '[kernels."ops/relu.py::relu_kernell"]\nnum_warps = 4\n'
                                      '[kernels."gelu_kernal"]\nnum_warps = 4\n'
                                      '[kernels."ops/gelu.py::gelu_kernel"]\nnum_warps = 4\n'
                                      '[kernels."relu_kernel"]\nnum_warps = 4\n'})
    ids = ["ops/relu.py::relu_kernel", "ops/gelu.py::gelu_kernel"]
    assert unmatched_kernels(cfg, ids) == [
        'ptxdiff.toml: kernels."ops/relu.py::relu_kernell" matches no kernel; did you mean "ops/relu.py::relu_kernel"?',
        'ptxdiff.toml: kernels."gelu_kernal" matches no kernel; did you mean "gelu_kernel"?']
    assert unmatched_kernels(Config(), ids) == []


def test_the_base_side_s_policy_decides_and_the_change_is_said():
    from ptxdiff.repo_config import governed, parse
    base = parse({"block": ["structural", "failed"]}, "pyproject.toml [tool.ptxdiff]")
    branch = parse({"block": [], "exclude": ["ops/*"], "max_specs": 2, "python_path": ["fake"]},
                   "pyproject.toml [tool.ptxdiff]")
    cfg, note = governed(base, branch)
    # a branch's smaller max_specs or its own import roots do not narrow what its gate compiles
    assert cfg.block == ("structural", "failed") and cfg.exclude == () and cfg.max_specs == 6
    assert cfg.python_path == ()
    assert note is not None and "(exclude, block, python_path, max_specs in pyproject.toml [tool.ptxdiff])" in note
    assert governed(base, base) == (base, None)
    more = parse({"max_specs": 12}, "ptxdiff.toml")   # more specs only compile more: used, nothing said
    assert governed(base, more) == (more, None)


def test_unmeasured_is_decided_by_its_own_key():
    from ptxdiff.repo_config import parse
    assert parse({"block_unmeasured": False}, "f").block_unmeasured is False
    with pytest.raises(ConfigError, match="block_unmeasured"):
        parse({"block": ["unmeasured"]}, "f")


@pytest.mark.parametrize("table,message", [
    ({"targets": []}, "key 'targets' must name at least one target"),
    ({"targets": 90}, "key 'targets' must be a list of strings"),
    ({"targets": ["sm_7"]}, "key 'targets': unknown target 'sm_7' (known: sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)"),
    ({"include": [1]}, "key 'include' must be a list of strings"),
    ({"exclude": 2}, "key 'exclude' must be a list of strings"),
    ({"python_path": [None]}, "key 'python_path' must be a list of strings"),
    ({"block": ["unmeasured"]}, "key 'block' names 'unmeasured', which block_unmeasured = true|false decides "
                                "(default true)"),
    ({"timeout": 0}, "key 'timeout' must be a positive number of seconds"),
    ({"kernels": []}, "key 'kernels' must be a table"),
    ({"semantic": "on"}, 'key \'semantic\' must be "off", "auto" or "always"'),
    ({"time": 1}, "key 'time' must be true or false"),
    ({"max_specs": 0}, "key 'max_specs' must be a positive integer"),
    ({"max_specs": True}, "key 'max_specs' must be a positive integer"),
    ({"block_guessed": "yes"}, "key 'block_guessed' must be true or false"),
    ({"block_unmeasured": 0}, "key 'block_unmeasured' must be true or false"),
    ({"min_effect": 1}, "key 'min_effect' must be a fraction between 0 and 1 (0.01 = 1%)"),
    ({"min_effect": -0.1}, "key 'min_effect' must be a fraction between 0 and 1 (0.01 = 1%)"),
    ({"driver_budget": 601}, "key 'driver_budget' must be a number of seconds from 0 to 600"),
    ({"driver_budget": False}, "key 'driver_budget' must be a number of seconds from 0 to 600"),
    ({"remote_cache": "s3://a b"}, 'key \'remote_cache\' must be a URL such as "s3://bucket/ptxdiff" '
                                   "(a suggestion: only your git config uses it)"),
    ({"remote_cache": 3}, 'key \'remote_cache\' must be a URL such as "s3://bucket/ptxdiff" '
                          "(a suggestion: only your git config uses it)"),
    # several keys wrong: the first in the keys' own order is said, whatever the table's order
    ({"remote_cache": "x y", "timeout": 0, "targets": []}, "key 'targets' must name at least one target"),
    ({"max_specs": 0, "semantic": "on", "kernels": 3, "block_unmeasured": 1}, "key 'kernels' must be a table"),
    ({"timeout": 0, "nope": 1}, "key 'nope' is unknown (known: block, block_guessed, block_unmeasured, driver_budget, "
                                "exclude, include, kernels, max_specs, min_effect, python_path, remote_cache, "
                                "semantic, targets, time, timeout)"),
])
def test_each_key_s_error_word_for_word(table, message):
    with pytest.raises(ConfigError) as info:
        parse(table, "w.toml")
    assert str(info.value) == "w.toml: " + message


def test_every_key_accepted_with_its_value_as_the_config_holds_it():
    cfg = parse({"targets": ["sm_90", "sm_80", "sm_90"], "include": "a", "exclude": ["b"], "python_path": ["src"],
                 "block": ["slower", "outputs-differ"], "timeout": 5, "kernels": {"k": {"num_warps": 4}},
                 "semantic": "auto", "time": True, "min_effect": 0, "max_specs": 3, "block_guessed": False,
                 "block_unmeasured": False, "driver_budget": 600, "remote_cache": "s3://bucket/p"}, "w.toml")
    assert (cfg.source, cfg.targets, cfg.targets_given, cfg.include, cfg.exclude, cfg.python_path, cfg.block) == \
        ("w.toml", (80, 90), True, ("a",), ("b",), ("src",), ("slower", "outputs-differ"))
    assert (cfg.semantic, cfg.time, cfg.max_specs, cfg.block_guessed, cfg.block_unmeasured, cfg.remote_cache) == \
        ("auto", True, 3, False, False, "s3://bucket/p")
    assert [(v, type(v)) for v in (cfg.timeout, cfg.min_effect, cfg.driver_budget)] == \
        [(5.0, float), (0.0, float), (600.0, float)]
    assert cfg.kernels == {"k": KernelConfig(SpecConfig(num_warps=4))}
    assert parse({}, "w.toml") == Config(source="w.toml") and not parse({}, "w.toml").targets_given
