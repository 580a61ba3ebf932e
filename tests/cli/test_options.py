"""Each verb unpacks its command line into frozen typed records at its entry: what the helpers and
the stages below cli/ get, never argparse's Namespace."""

from __future__ import annotations

import dataclasses

import pytest

from ptxdiff.cli.commands import cache, ci, corpus, demo, diff, install, log, pre_push, toolchain
from ptxdiff.cli.commands import record as record_verb
from ptxdiff.cli.options import Compiling, Shown
from ptxdiff.cli.parser import build_parser
from ptxdiff.record import command as record


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_diff_is_unpacked_into_its_record():
    opts = diff.Options.of(parse("-q", "diff", "A", "B", "--target", "sm_80", "-j", "3", "--no-cache", "--import",
                                 "--no-sandbox", "--triton", "3.6.0", "--format", "json", "--check", "--all",
                                 "--wide", "--ptx", "--outputs", "-o", "out.json", "--color=never"))
    assert opts == diff.Options(
        compiling=Compiling(command="diff", repo=".", target="sm_80", jobs=3, no_cache=True, imports=True,
                            triton="3.6.0", no_sandbox=True, outputs=True),
        shown=Shown(color="never", quiet=True, format="json", output="out.json", wide=True, check=True, ptx=True),
        revs=("A", "B"), all=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.all = False   # type: ignore[misc]


def test_a_verb_keeps_the_defaults_of_the_options_it_does_not_have():
    opts = log.Options.of(parse("log", "k", "v1..v2", "--executor", "ray"))
    assert (opts.kernel, opts.range) == ("k", "v1..v2")
    assert opts.compiling.executor == "ray" and opts.shown == Shown()
    push = pre_push.Options.of(parse("pre-push", "up", "git@x:y", "-j", "2"))
    assert (push.remote, push.url, push.compiling.jobs, push.compiling.command) == ("up", "git@x:y", 2, "pre-push")
    assert push.compiling.no_sandbox is False and push.compiling.triton is None


@pytest.mark.parametrize("argv,record", [
    (("cache", "prune", "--max-mb", "5"), cache.Options("prune", 5.0)),
    (("install", "--global", "--dry-run"), install.Options(global_=True, dry_run=True)),
    (("toolchain", "add", "3.6.0", "3.9.0"), toolchain.Options("add", ("3.6.0", "3.9.0"))),
    (("demo", "--no-pause"), demo.Options(pause=False)),
    (("corpus", "gelu", "--readme", "R.md"), corpus.Options(Compiling("corpus"), Shown(), ("gelu",), "R.md")),
    (("ci", "--base", "main", "--no-fail"), ci.Options(Compiling("ci"), Shown(), base="main", no_fail=True)),
])
def test_each_verb_builds_its_record_from_a_parsed_command_line(argv, record):
    verb = {"cache": cache, "install": install, "toolchain": toolchain, "demo": demo, "corpus": corpus, "ci": ci}
    assert verb[argv[0]].Options.of(parse(*argv)) == record


def test_record_hands_the_stage_below_a_record_not_the_namespace(monkeypatch):
    seen = []
    monkeypatch.setattr(record, "main", lambda asked, command: seen.append((asked, command)) or 0)
    assert record_verb.run(parse("record", "--keep", "4", "--device", "interpreter"), ["python", "t.py"]) == 0
    assert seen == [(record.Asked(keep=4, device="interpreter"), ["python", "t.py"])]
