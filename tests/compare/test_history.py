"""`ptxdiff log K A..B` starts from the kernel as it was at A: it agrees with `ptxdiff diff`."""

from __future__ import annotations

import json

import pytest

from helpers import commit, head, make_repo, run_main, scale_kernel

pytestmark = pytest.mark.integration


def log(repo, capsys, rev_range):
    rc, out, err = run_main(["log", "scale_kernel", rev_range, "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    return [(e["commit"], [r["verdict"] for r in e["rows"]]) for e in json.loads(out)]


def test_log_of_a_range_agrees_with_diff_on_its_first_commit(tmp_path, capsys):
    repo = make_repo(tmp_path, {"README": "a\n"})
    added = commit(repo, "add the kernel", {"ops/k.py": scale_kernel()})
    commit(repo, "docs", {"README": "b\n"})
    changed = commit(repo, "structural", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    rc, out, err = run_main(["diff", "HEAD~1", "HEAD", "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert [r["verdict"] for r in json.loads(out)["kernels"]] == ["structural"]

    assert log(repo, capsys, "HEAD~1..HEAD") == [(changed, ["structural"])]
    assert log(repo, capsys, "HEAD~2..HEAD") == [(changed, ["structural"])]
    assert log(repo, capsys, "HEAD~3..HEAD") == [(added, ["added"]), (changed, ["structural"])]
    assert log(repo, capsys, "HEAD~2..HEAD~1") == []                 # there, unchanged: nothing to tell
    assert head(repo) == changed


def test_log_compiles_every_version_of_the_story_in_one_batch(tmp_path, capsys, monkeypatch):
    """The versions' compile jobs go to one executor together (every worker busy at once, or every
    Ray node), not one commit after another."""
    from ptxdiff.compile import executor

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()}, message="add")
    added = head(repo)
    two = commit(repo, "two", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    three = commit(repo, "three", {"ops/k.py": scale_kernel("x * 3.0 + 1.0")})
    opened = []
    real = executor.open_executor

    def counting(spec, *args, **kwargs):
        opened.append(spec)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(executor, "open_executor", counting)
    assert log(repo, capsys, "HEAD") == [(added, ["added"]), (two, ["structural"]), (three, ["constants-only"])]
    assert opened == ["local"]


@pytest.mark.parametrize("use_cache", [True, False])
def test_a_batch_reports_what_one_comparison_after_another_reports(tmp_path, cache, use_cache):
    """Where each row came from and how much compiled, as comparing one by one says it: a result
    the batch compiled is `compiled` in the first comparison that uses it and `local` after (with
    --no-cache, compiled in each)."""
    import shutil

    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "change", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    r = Repo(repo)
    old, new = r.side("HEAD~1"), r.side("HEAD")

    def seen(reports):
        return [([(row.kernel, row.verdict, row.cache) for row in rep.rows], rep.compiled) for rep in reports]

    batch = seen(Engine(r, jobs=2, use_cache=use_cache).compare_many([(old, new, None), (old, new, None)]))
    shutil.rmtree(cache, ignore_errors=True)
    engine = Engine(r, jobs=2, use_cache=use_cache)
    assert batch == seen([engine.compare(old, new), engine.compare(old, new)])
    kernel = "ops/k.py::scale_kernel"
    assert batch == [([(kernel, "structural", "compiled")], 2),
                     ([(kernel, "structural", "compiled" if not use_cache else "local")], 0 if use_cache else 2)]


def test_a_warm_log_discovers_nothing_and_shows_its_walk_on_a_terminal(tmp_path, capsys, monkeypatch):
    """What the walk needs is stored by tree: the second log over the same history reads every
    commit's kernel from the store. On a terminal the walk has a progress line; -q silences it."""
    import os
    import pty
    import subprocess
    import sys

    from ptxdiff.compare import history as historymod

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "README": "0\n"})
    for i in range(1, 13):   # mostly commits that leave the kernel alone, a few that change it
        commit(repo, f"c{i}", {"ops/k.py": scale_kernel(f"x * {i}.0")} if i % 4 == 0 else {"README": f"{i}\n"})
    cold = log(repo, capsys, "HEAD")
    assert len(cold) == 4
    calls = []
    real = historymod.discover
    monkeypatch.setattr(historymod, "discover", lambda *a, **k: calls.append(a) or real(*a, **k))
    assert log(repo, capsys, "HEAD") == cold and calls == []

    for quiet, said in (([], True), (["-q"], False)):
        primary, secondary = pty.openpty()
        proc = subprocess.run([sys.executable, "-m", "ptxdiff", "log", "scale_kernel", *quiet], cwd=repo,
                              stdout=subprocess.PIPE, stderr=secondary, env={**os.environ, "TERM": "xterm"})
        os.close(secondary)
        err = b""
        try:
            while chunk := os.read(primary, 65536):
                err += chunk
        except OSError:   # the pty's other end is closed: all was read
            pass
        os.close(primary)
        assert proc.returncode == 0
        assert (b"commits looked at for scale_kernel" in err) == said
        assert b"commits looked at" not in proc.stdout          # stderr only
