"""The compile cache trusts only what it wrote for that key, and `cache clear` says what it did."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from helpers import cache_entries, commit, make_repo, metrics, ptxdiff, scale_kernel
from ptxdiff.compare.cache import FORMAT, Cache
from ptxdiff.compare.spec_result import valid_results

V2 = "x * 2.0 + 1.0"
METRICS = metrics(ptx_regs=10, ptx_regs_by_type={"r": 10}, ptx_instrs=17, ptx_opcodes={"ld": 1, "st": 1}, regs=10,
                  sass_instrs=12).as_json()
GOOD = [{"key": "k", "label": "BLOCK=128 w4 s3", "spec": {}, "metrics": METRICS, "ptx": ".entry k"}]


def entry(value, key: str) -> bytes:
    return gzip.compress(json.dumps({"format": FORMAT, "key": key, "value": value}).encode())


@pytest.mark.parametrize("value, ok", [
    (GOOD, True),
    ([{"key": None, "label": "-", "error": "compile failed: boom"}], True),
    ([], False),                                                     # a kernel always has a spec
    ({}, False),
    ("ok", False),
    ([{"key": "k", "label": "x"}], False),                           # neither measured nor failed
    ([{**GOOD[0], "metrics": {}}], False),
    ([{**GOOD[0], "metrics": {**METRICS, "regs": "10"}}], False),
    ([{**GOOD[0], "metrics": {**METRICS, "regs": True}}], False),
    ([{**GOOD[0], "metrics": {**METRICS, "occupancy": float("nan")}}], False),
    ([{**GOOD[0], "metrics": {**METRICS, "ptx_opcodes": ["ld"]}}], False),
    ([{**GOOD[0], "ptx": None}], False),
    ([{**GOOD[0], "cubin": "eJwDAAAAAAE="}], True),           # the packed cubin the HTML report disassembles
    ([{**GOOD[0], "cubin": ["EXIT"]}], False),
    ([{**GOOD[0], "error": ""}], False),
    ([GOOD[0], 3], False),
])
def test_only_results_of_the_right_shape_are_valid(value, ok):
    assert valid_results(value) is ok


def test_an_entry_is_trusted_only_under_its_own_key_and_format(tmp_path):
    c = Cache(tmp_path / "c")
    key, other = "ab" + "1" * 62, "cd" + "2" * 62
    c.put(key, GOOD)
    assert c.get(key) == GOOD
    path = tmp_path / "c" / key[:2] / f"{key}.json.gz"
    moved = tmp_path / "c" / other[:2] / f"{other}.json.gz"      # the same file under another name
    moved.parent.mkdir()
    moved.write_bytes(path.read_bytes())
    assert c.get(other) is None
    path.write_bytes(gzip.compress(json.dumps(GOOD).encode()))    # a bare value: no envelope
    assert c.get(key) is None
    path.write_bytes(gzip.compress(json.dumps({"format": FORMAT + 1, "key": key, "value": GOOD}).encode()))
    assert c.get(key) is None


@pytest.mark.integration
def test_a_cache_of_the_wrong_shape_is_compiled_again_and_the_check_still_blocks(tmp_path, cache):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/j.py": scale_kernel(name="j_kernel")})
    commit(repo, "two structural changes", {"ops/k.py": scale_kernel(V2), "ops/j.py": scale_kernel(V2, "j_kernel")})
    first = ptxdiff(["diff", "HEAD~1", "HEAD", "--check", "-q"], repo)
    assert first.returncode == 1, first.stdout + first.stderr
    entries = cache_entries(cache)
    assert len(entries) == 4
    # valid JSON, wrong shapes: what an older ptxdiff, another tool or a bad disk could leave
    key = [path.name.split(".")[0] for path in entries]
    damaged = [entry([], key[0]), entry({"metrics": {}}, key[1]), entry([{"key": None, "label": "-"}], key[2]),
               gzip.compress(json.dumps(GOOD).encode())]                # the shape without the envelope
    for path, data in zip(entries, damaged):
        path.write_bytes(data)
    again = ptxdiff(["diff", "HEAD~1", "HEAD", "--check", "-q", "--format", "json"], repo)
    assert again.returncode == 1, again.stderr
    verdicts = {r["kernel"]: r["verdict"] for r in json.loads(again.stdout)["kernels"]}
    assert verdicts == {"ops/j.py::j_kernel": "structural", "ops/k.py::scale_kernel": "structural"}


@pytest.mark.integration
def test_cache_clear_says_what_it_removed_and_fails_honestly(tmp_path, cache):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    c = Cache(cache)
    keys = [f"{i:02x}" + "0" * 62 for i in range(3)]
    for key in keys:
        c.put(key, GOOD)
    (cache / "README.txt").write_text("not ours\n")               # PTXDIFF_CACHE_DIR may be shared
    p = ptxdiff(["cache", "clear"], repo)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"removed 3 entries from {cache}"
    assert cache_entries(cache) == [] and (cache / "README.txt").exists()

    c.put(keys[0], GOOD)
    stuck = cache / "ab" / ("ab" + "0" * 62 + ".json.gz")          # an entry that cannot be unlinked
    stuck.mkdir(parents=True)
    p = ptxdiff(["cache", "clear"], repo)
    assert p.returncode == 3
    assert "removed 1 entries" in p.stderr and "1 could not be removed" in p.stderr and str(stuck) in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = ptxdiff(["cache", "prune", "--max-mb", "0"], repo)
    assert p.returncode == 3 and "could not prune" in p.stderr


@pytest.mark.integration
def test_cache_clear_also_forgets_what_git_diff_stored(tmp_path, capsys):
    from helpers import run_main
    from ptxdiff.gitdiff.driver import state_dir

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    results = Path(state_dir(str(repo / ".git"))) / "results"
    results.mkdir(parents=True)
    (results / "a-comparison").write_bytes(b"lines")
    rc, out, err = run_main(["cache", "clear", "-C", str(repo)], capsys)
    assert rc == 0, err
    assert not any(results.iterdir()) and "1 stored git diff results" in out


@pytest.mark.integration
def test_two_files_holding_the_same_kernel_each_keep_their_own_entry(tmp_path, cache):
    """The same kernel text in two files builds the same closure, but each result carries its own
    file's source lines: one key for both made every warm run compile again, each file's result
    pushing out the other's (the corpus compiled 13 specs on every warm run)."""
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(), "ops/b.py": scale_kernel()})
    commit(repo, "the same change in both", {"ops/a.py": scale_kernel(V2), "ops/b.py": scale_kernel(V2)})
    cold = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json"], repo)
    assert {r["cache"] for r in json.loads(cold.stdout)["kernels"]} == {"compiled"}, cold.stderr
    assert len(cache_entries(cache)) == 4
    for _ in range(2):
        warm = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json"], repo)
        assert [(r["kernel"], r["cache"]) for r in json.loads(warm.stdout)["kernels"]] == [
            ("ops/a.py::scale_kernel", "local"), ("ops/b.py::scale_kernel", "local")], warm.stderr
