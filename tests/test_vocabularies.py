"""The vocabularies are StrEnums (#36): each member is its text wherever it is written (JSON,
f-strings, tables), the verdict table is in its documented order, and config reads through it."""

from __future__ import annotations

import json

import pytest

from ptxdiff import repo_config
from ptxdiff.compare.gate_inputs import Role
from ptxdiff.compare.results import Provenance
from ptxdiff.compile.protocol import Op, Outcome
from ptxdiff.corpus.labels import Label
from ptxdiff.discovery.callsites import Fact, FactKind
from ptxdiff.discovery.params import ParamMark
from ptxdiff.errors import ConfigError
from ptxdiff.specs.plan import SOURCES, SpecSource
from ptxdiff.verdict import DEFAULT_BLOCK, DYNAMIC_BLOCK, ORDER, Outputs, Timing, Verdict

ENUMS = (Verdict, SpecSource, Role, Provenance, FactKind, ParamMark, Label, Outputs, Timing, Outcome, Op)


@pytest.mark.parametrize("enum", ENUMS)
def test_a_member_is_written_as_its_value(enum):
    for member in enum:
        text = member.value
        assert str(member) == format(member) == f"{member}" == f"{member:>0}" == "".join([member]) == text
        assert json.dumps(member) == json.dumps(text)
        assert json.dumps({member: [member]}, indent=1) == json.dumps({text: [text]}, indent=1)
        assert member == text and hash(member) == hash(text) and enum(text) is member
        assert enum.__name__ not in str(member) + format(member) + json.dumps(member)


def test_every_verdict_in_the_table_round_trips_in_the_documented_order():
    assert ORDER == ("failed", "unmeasured", "added", "removed", "structural", "reordered", "constants-only",
                     "identical", "unpaired")
    assert all(Verdict(str(v)) is v for v in ORDER)
    assert set(Verdict) - set(ORDER) == {Verdict.NEW}   # `-`: no base, nothing compared, never blocks
    assert DEFAULT_BLOCK == (Verdict.STRUCTURAL, Verdict.FAILED)
    assert repo_config.Config().block is DEFAULT_BLOCK


def test_config_block_reads_through_the_enum_and_says_bad_names_as_before():
    cfg = repo_config.parse({"block": ["reordered", "slower", "outputs-differ"]}, "f")
    assert cfg.block == ("reordered", "slower", "outputs-differ")
    assert cfg.block[0] is Verdict.REORDERED and type(cfg.block[1]) is str
    with pytest.raises(ConfigError) as bad:
        repo_config.parse({"block": ["structral"]}, "pyproject.toml")
    assert str(bad.value) == ("pyproject.toml: key 'block' names unknown verdicts ['structral'] (known: failed, "
                              "unmeasured, added, removed, structural, reordered, constants-only, identical, unpaired)")


def test_spec_sources_most_trusted_first():
    assert SOURCES == tuple(SpecSource) == ("config", "recorded", "call-site", "guessed")


def test_provenance_in_the_order_a_row_says_it():
    assert tuple(Provenance) == ("compiled", "remote", "local")


def test_a_fact_of_either_spelling_is_the_same_fact():
    assert Fact(FactKind.VALUE, 1) == Fact("value", 1) and len({Fact(FactKind.TYPE, "i32"), Fact("type", "i32")}) == 1
    assert [str(k) for k in FactKind] == ["value", "type", "none", "expr"]
    assert [str(r) for r in Role] == ["gate", "report", "call-site", "pin"]


def test_the_dynamic_results_a_block_list_may_name_are_spelled_as_the_report_spells_them():
    assert DYNAMIC_BLOCK == ("outputs-differ", "slower")
    assert [o.value for o in Outputs] == ["outputs-equal", "outputs-differ", "nondeterministic", "not-run"]
    assert [t.value for t in Timing] == ["faster", "slower", "within-noise"]
