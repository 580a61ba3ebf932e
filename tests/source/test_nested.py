"""nested.py: TOML and JSON from a repository are measured before they are parsed, so a config
or a recording nested 100,000 deep is a one-line config error, never RecursionError (exit 3)."""

from __future__ import annotations

import json

import pytest

from ptxdiff import repo_config
from ptxdiff.errors import ConfigError
from ptxdiff.record import launches as recorded
from ptxdiff.source import nested

DEEP = 100_000


@pytest.mark.parametrize("text,expected", [
    ("x = [[1], {a = [2]}]", 3),
    ('a = "[[[[" # ' + "[" * 100, 0),        # in a string, in a comment: not nesting
    ("a = '" + "[" * 100 + "'", 0),
    ('{"a": [1, {"b": "x\\"[[["}]}', 3),    # an escaped quote does not end the string
    ("x = " + "[" * 200 + "]" * 200, 200),
])
def test_depth_counts_brackets_outside_strings_and_comments(text, expected):
    assert nested.depth(text) == expected


def toml_files(text: str, name: str = "ptxdiff.toml") -> tuple:
    data = text.encode()
    return (lambda path: data), (lambda path: path == name)


@pytest.mark.parametrize("name,text", [
    ("ptxdiff.toml", "x = " + "[" * DEEP + "]" * DEEP),
    ("ptxdiff.toml", "x = " + "{a = " * DEEP + "1" + "}" * DEEP),
    ("pyproject.toml", "[tool.ptxdiff]\ntargets = " + "[" * DEEP + "]" * DEEP),
    # a string the measure misreads (a multi-line one, then a quote in a comment): the parse's own guard
    ("ptxdiff.toml", 'x = ["""a"b""", ' + "[" * DEEP + "]" * DEEP + '] # "'),
])
def test_a_deeply_nested_config_is_a_config_error(name, text):
    with pytest.raises(ConfigError, match=rf"^{name}: (nested \d+ levels deep, over the bound of 64|nested too deeply)"):
        repo_config.load(*toml_files(text, name))


def test_a_config_over_the_size_bound_is_a_config_error():
    text = "# padding\n" * (nested.MAX_CONFIG_BYTES // 10 + 1)
    with pytest.raises(ConfigError, match=r"^ptxdiff.toml: 1\.0 MB, over the 1 MB bound for a config$"):
        repo_config.load(*toml_files(text))


def test_a_config_within_the_bounds_is_read():
    """The control: nesting as deep as a real config gets is fine."""
    cfg = repo_config.load(*toml_files('[kernels."k.py::k"]\nspecs = [{constexprs = {BLOCK = 64}}]\n'))
    assert "k.py::k" in cfg.kernels


LAUNCH = {"kernel": "ops/k.py::k", "params": ["x_ptr", "BLOCK"], "signature": {"x_ptr": "*fp32"},
          "constexprs": {"BLOCK": 32}, "divisible_by_16": ["x_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
          "autotune": None, "via": "interpreter", "count": 1}


@pytest.mark.parametrize("line", [
    '{"kernel": ' + "[" * DEEP + "]" * DEEP + "}",
    json.dumps({**LAUNCH, "options": "x"})[:-1] + ', "extra": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}",
])
def test_a_deeply_nested_recording_line_is_a_config_error(line):
    text = json.dumps(LAUNCH) + "\n" + line + "\n"
    with pytest.raises(ConfigError, match=r"^\.ptxdiff/launches\.jsonl:2: nested \d+ levels deep, over the bound"):
        recorded.parse(text, ".ptxdiff/launches.jsonl")


def test_a_recording_over_the_size_bound_is_a_config_error():
    data = b"\n" * (nested.MAX_RECORDING_BYTES + 1)
    with pytest.raises(ConfigError, match=r"over the 16 MB bound for a recording"):
        recorded.load(lambda path: data, lambda path: True)
    assert recorded.load(lambda path: (json.dumps(LAUNCH) + "\n").encode(), lambda path: True)   # the control
