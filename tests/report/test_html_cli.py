"""`--format html` from the command line on a real repository: `diff -o`, `show` to stdout and
`log -o` write one page each, whose PTX lines point into the kernel's file as each side had it
(read from git), with each side's SASS beside it (disassembled for the page only, and kept for the
next one), and whose log charts mark the commit that changed the launch."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from helpers import commit, isolate, make_repo, run_main

pytestmark = pytest.mark.integration

KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)
"""
WRAPPER = """import torch
from ops.vadd import add_kernel


def add(x, y):
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton_cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    return out
"""


def blocks(page: str) -> dict[str, dict]:
    return {m.group(1): json.loads(m.group(2))
            for m in re.finditer(r'<script type="application/json" id="([\w-]+)">(.*?)</script>', page)}


def test_diff_show_and_log_write_pages_linked_to_each_sides_source(tmp_path, monkeypatch, capsys):
    cache = isolate(tmp_path, monkeypatch)
    repo = make_repo(tmp_path, {"ops/vadd.py": KERNEL, "ops/wrap.py": WRAPPER}, message="add")
    commit(repo, "BLOCK 128", {"ops/wrap.py": WRAPPER.replace("BLOCK=64)", "BLOCK=128)")})
    commit(repo, "x - y", {"ops/vadd.py": KERNEL.replace("x + y", "x - y")})

    # a run without a page keeps each spec's cubin and disassembles none
    rc, _, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q"], capsys)
    assert rc == 0, err
    entries = [json.loads(gzip.decompress(p.read_bytes()))["value"] for p in cache.glob("*/*.json.gz")]
    assert len(entries) == 2 and all("cubin" in r for e in entries for r in e)
    assert not list(cache.glob("sass/*/*"))
    out = tmp_path / "diff.html"
    rc, _, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q", "--format", "html", "-o", str(out)], capsys)
    assert rc == 0, err
    assert "wrote" not in err                                     # -q: nothing said
    rc, said, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "--format", "html", "-o", str(out)], capsys)
    assert rc == 0 and not said and f"ptxdiff: wrote {out} (" in err     # issue 38: -o says where it wrote
    page = out.read_text()
    data = blocks(page)
    old, new = data["ptx-0"]["sides"]
    assert [f["name"] for f in old["files"]] == ["ops/vadd.py"] == [f["name"] for f in new["files"]]
    assert "x + y" in data[old["files"][0]["src"]]["text"] and "x - y" in data[new["files"][0]["src"]]["text"]
    lines, per_line = new["text"].splitlines(), [n for count, _, n in new["runs"] for _ in range(count)]
    (sub,) = [i for i, line in enumerate(lines) if line.startswith("sub.f32")]
    assert per_line[sub] == 11                                   # `tl.store(out_ptr + offs, x - y, ...)`
    # each side's SASS, disassembled in a sealed worker for this page, normalised and aligned, then kept
    sass_old, sass_new = data["sass-0"]["sides"]
    assert sass_old["text"].startswith("add_kernel:\n") and "EXIT" in sass_new["text"].splitlines()
    assert any(line.startswith("FADD") for line in sass_old["text"].splitlines())
    assert any(op[0] != "e" for op in data["sass-0"]["ops"]) and "/*" not in sass_old["text"] + sass_new["text"]
    assert len(list(cache.glob("sass/*/*.sass.gz"))) == 2
    # the next page reads them back: nothing to disassemble
    with monkeypatch.context() as m:
        m.setattr("ptxdiff.compile.listings._run", lambda todo, jobs: pytest.fail(f"disassembled {len(todo)}"))
        rc, _, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q", "--format", "html", "-o", str(out)],
                              capsys)
    assert rc == 0, err
    assert blocks(out.read_text())["sass-0"] == data["sass-0"]

    rc, shown, err = run_main(["-C", str(repo), "show", "-q", "--format", "html"], capsys)
    assert rc == 0, err
    assert shown.startswith("<!DOCTYPE html>") and shown.count('<details class="row"') == 1

    out = tmp_path / "log.html"
    rc, _, err = run_main(["-C", str(repo), "log", "add_kernel", "-q", "--format", "html", "-o", str(out)], capsys)
    assert rc == 0, err
    page = out.read_text()
    assert page.count('<details class="row"') == 3 and page.count("<svg") == 5
    assert "BLOCK 64 -&gt; 128 (call site ops/wrap.py:8)" in page and page.count('class="launch"') == 5
    assert set(re.findall(r'<a href="#(r\d)">', page)) == {"r0", "r1", "r2"}
