"""The HTML report as markup (no browser here: test_html_browser.py renders it): repository text
is escaped everywhere, JSON blocks cannot end early, nothing is fetched, a row's PTX is inert
data until opened, each PTX line points at its source line, and log's charts link their rows."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
import zlib
from html.parser import HTMLParser

import pytest
from html_samples import HOSTILE, diff_report, history, read_source, rebuilt, row, show_report

from ptxdiff.cli.htmlout import artifact_line, html_file
from ptxdiff.report.html import history_page, report_page, script_json
from ptxdiff.report.html_chart import axis
from ptxdiff.report.html_view import alignment, opcode_deltas, repo_path, sass_view
from ptxdiff.specs.detail import SpecDetail


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script block."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in: dict[str, str | None] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in = dict(attrs)
            self.scripts.append((self._in, ""))

    def handle_data(self, data):
        if self._in is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in = None


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def test_hostile_repository_text_stays_text():
    page = report_page(diff_report(hostile=True), read_source)
    tags = parse(page)
    assert not [t for t, _ in tags.tags if t == "img"]
    assert not [(t, a) for t, a in tags.tags for k in a if k.startswith("on")]
    # the page's one script, and inert JSON blocks: nothing else runs
    kinds = [a.get("type") for a, _ in tags.scripts]
    assert kinds.count(None) == 1 and set(kinds) <= {None, "application/json"}
    assert 'data-pwned","1")</script>' not in page and "&lt;script&gt;" in page
    for attrs, body in tags.scripts:
        if attrs.get("type") == "application/json":
            assert "<" not in body and json.loads(body) is not None
    # the names and errors are there, as text, where people read them
    assert page.count("compile failed: &lt;script&gt;") == 2        # the row's facts and the notes
    assert "call site &lt;script&gt;" in page


def test_the_table_and_each_rows_facts_are_markup_not_script():
    page = report_page(diff_report(), read_source)
    tags = parse(page)
    assert sum(1 for t, a in tags.tags if t == "tr" and "data-href" in a) == 3
    assert [a["id"] for t, a in tags.tags if t == "details" and "row" in (a.get("class") or "")] == ["r0", "r1", "r2"]
    assert "<dt>why</dt><dd>add.f32 -1, mul.f32 +1</dd>" in page
    assert '<div id="filters" hidden>' in page                  # shown by the script, which they need
    assert "needs JavaScript" in page


def test_json_in_a_script_block_cannot_end_it_or_open_markup():
    text = script_json({"a": "</script><!--<script>x&y", "b": "\u2028"})
    assert not set("<>&") & set(text)
    assert json.loads(text) == {"a": "</script><!--<script>x&y", "b": "\u2028"}


def test_the_policy_allows_only_the_pages_own_script_and_no_network():
    page = report_page(diff_report(), read_source)
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert "default-src 'none'" in policy and "connect-src" not in policy
    (script,) = [body for attrs, body in parse(page).scripts if attrs.get("type") is None]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    for each in (page, history_page(history(), read_source), report_page(show_report(3), read_source)):
        markup = re.sub(r'<script type="application/json"[^>]*>.*?</script>', "", each)   # inert base64 may spell `//b`
        assert not re.search(r"https?://|//[a-z]", markup)
        assert not [a for t, a in parse(each).tags if "src" in a or t in ("link", "iframe", "object")]


def test_a_rows_ptx_is_inert_data_with_its_source_lines():
    page = report_page(diff_report(), read_source)
    blocks = {a["id"]: json.loads(body) for a, body in parse(page).scripts if a.get("type") == "application/json"}
    view = blocks["ptx-0"]                                      # add -> mul
    old, new = view["sides"]
    assert old["label"].startswith("old") and new["label"].startswith("new")
    assert [f["name"] for f in old["files"]] == ["/tmp/ptxgen/k_add.py"]
    source = blocks[old["files"][0]["src"]]
    assert "tl.store(out_ptr + offs, x + y, mask=mask)" in source["text"]
    lines = old["text"].splitlines()
    per_line = [(f, n) for count, f, n in old["runs"] for _ in range(count)]
    assert len(per_line) == len(lines)
    assert per_line[lines.index("add.f32 %r3, %r1, %r2;")] == (0, 12)
    assert [op[0] for op in view["ops"]] == ["e", "r", "e"]     # one line replaced: add.f32 -> mul.f32
    assert len(blocks["ptx-2"]["sides"]) == 1                   # identical: one side, said so
    assert "the same" in blocks["ptx-2"]["sides"][0]["label"]
    assert len([k for k in blocks if k.startswith("src-")]) == 5   # each file once: add, mul, leaky, leaky_01, sub


def blocks_of(page: str) -> dict:
    return {a["id"]: json.loads(body) for a, body in parse(page).scripts if a.get("type") == "application/json"}


def test_a_rows_sass_is_folded_inert_data_aligned_like_its_ptx():
    page = report_page(diff_report(), read_source)
    view = blocks_of(page)["sass-0"]                            # add -> mul, both sides disassembled
    old, new = view["sides"]
    assert view["kind"] == "SASS" and old["label"].startswith("old") and new["label"].startswith("new")
    assert "FADD R11, R11, R0" in old["text"].splitlines() and "FMUL R11, R11, R0" in new["text"].splitlines()
    assert [op[0] for op in view["ops"]] == ["e", "r", "e"]     # one instruction replaced
    assert old["runs"] == [] and old["files"] == []             # no source lines: the listing has none
    # folded until opened, after the row's PTX view; rows whose sides have no SASS say so
    assert page.index('data-view="ptx-0"') < page.index('<details class="sass"><summary>SASS</summary>')
    assert "sass-1" not in blocks_of(page) and page.count('<p class="dim nosass">no SASS</p>') == 2


def test_sass_is_escaped_aligned_through_register_numbers_and_says_a_missing_side():
    hostile = row("ops/add.py::add_kernel", "add", "mul", "structural", old_sass=f"FADD R1, R2, R3\n{HOSTILE}\n",
                  new_sass="FADD R7, R8, R9\n")
    report = diff_report()
    page = report_page(dataclasses.replace(report, rows=[hostile]), read_source)
    assert 'data-pwned","1")</script>' not in page
    (body,) = [b for a, b in parse(page).scripts if a.get("id") == "sass-0"]
    assert "<" not in body and HOSTILE in json.loads(body)["sides"][0]["text"]
    renamed = dataclasses.replace(hostile, old_sass="FADD R1, R2, R3\nBRA `(.L_x_0)\n",
                                  new_sass="FADD R7, R8, R9\nBRA `(.L_x_3)\n")
    assert sass_view(renamed, ("old", "new"))["ops"] == [["e", 0, 2, 0, 2]]
    one = report_page(dataclasses.replace(report, rows=[dataclasses.replace(hostile, old_sass=None)]), read_source)
    assert "no SASS on the old side" in one and len(blocks_of(one)["sass-0"]["sides"]) == 1


def test_a_400_row_show_carries_each_rows_ptx_unexpanded():
    page = report_page(show_report(400), read_source)
    tags = parse(page)
    assert sum(1 for t, a in tags.tags if t == "tr" and "data-href" in a) == 400
    assert sum(1 for a, _ in tags.scripts if (a.get("id") or "").startswith("ptx-")) == 400
    assert sum(1 for a, _ in tags.scripts if (a.get("id") or "").startswith("src-")) == 6     # one per kernel file
    assert not [a for t, a in tags.tags if t == "table" and "ptx" in (a.get("class") or "")]
    assert all(not a.get("open") for t, a in tags.tags if t == "details")


def test_alignment_sees_through_register_numbers_and_labels():
    old = ["mov.u32 %r1, 0;", "add.f32 %r3, %r1, %r2;", "bra $L__BB0_2;"]
    renamed = ["mov.u32 %r7, 0;", "add.f32 %r9, %r7, %r8;", "bra $L__BB0_5;"]
    assert alignment(old, renamed) == [["e", 0, 3, 0, 3]]
    assert alignment(old, [old[0], "mul.f32 %r3, %r1, %r2;", old[2]]) == [["e", 0, 1, 0, 1], ["r", 1, 2, 1, 2],
                                                                          ["e", 2, 3, 2, 3]]


def test_opcode_deltas_largest_first_and_counted_beyond_the_bars():
    report = diff_report()
    moved, more = opcode_deltas(report.rows[0])
    assert moved == [("add.f32", -1), ("mul.f32", 1)] and more == 0
    one_side, _ = opcode_deltas(show_report(1).rows[0])
    assert one_side and all(d > 0 for _, d in one_side)
    assert one_side == sorted(one_side, key=lambda kd: (-kd[1], kd[0]))


def test_history_page_charts_link_every_point_to_its_row_and_mark_launch_changes():
    page = history_page(history(subject=HOSTILE), read_source)
    ids = set(re.findall(r'id="(r\d+)"', page))
    links = re.findall(r'<a href="#(r\d+)">', page)
    assert ids == {"r0", "r1", "r2"} and set(links) == ids
    assert page.count("<svg") == 5                              # registers, PTX, SASS, spills, occupancy
    assert page.count('class="launch"') == 5                    # the BLOCK change, on every chart
    assert "BLOCK 64 -&gt; 128" in page
    assert 'data-pwned","1")</script>' not in page and "&lt;script&gt;document" in page
    assert "<title>3333333 &lt;script&gt;" in page               # a dot's tooltip names its commit, escaped


@pytest.mark.parametrize(("values", "ticks"), [([16, 26], [15, 20, 25, 30]), ([0, 0], [0, 1]),
                                               ([1.0, 1.0], [0, 1]), ([0.25, 0.5], [0.2, 0.3, 0.4, 0.5]),
                                               ([3, 4], [3, 4])])
def test_axis_ticks_are_round_and_cover_the_values(values, ticks):
    assert axis(values) == pytest.approx(ticks)


def test_a_ptx_file_name_is_the_repository_path_without_its_revision():
    assert repo_path("ops/a@b/k.py@7f2ef4dbb6") == "ops/a@b/k.py"
    assert repo_path("/usr/lib/python3/triton/language/standard.py") == "/usr/lib/python3/triton/language/standard.py"


def test_ci_puts_the_html_beside_the_json_and_the_comment_says_where(tmp_path):
    json_file = str(tmp_path / "out" / "r.json")
    assert html_file(None, json_file) == str(tmp_path / "out" / "r.html")
    assert html_file("", json_file) == ""
    github = artifact_line("/tmp/x/ptxdiff-report.html", {"GITHUB_RUN_ID": "42", "GITHUB_REPOSITORY": "o/r"})
    assert "`ptxdiff-report.html` in the artifacts of [this run](https://github.com/o/r/actions/runs/42)" in github
    gitlab = artifact_line("/builds/p/ptxdiff-report.html", {"CI_JOB_URL": "https://gl.example/p/-/jobs/9",
                                                             "CI_PROJECT_DIR": "/builds/p"})
    assert "[open it](https://gl.example/p/-/jobs/9/artifacts/file/ptxdiff-report.html)" in gitlab
    assert "beside the JSON report" in artifact_line("/x/r.html", {})


def test_the_log_charts_follow_each_spec_across_commits_whatever_order_the_rows_come_in():
    """Issue 38: two specs whose rows come in another order in each commit: a line per spec, named
    by what tells it apart, never regs 32 -> 223 -> 24 between the first rows of each commit."""
    from ptxdiff.compare.history import Event
    from ptxdiff.git.values import CommitInfo
    from ptxdiff.metrics.counts import Metrics

    def spec(mode: int, regs: int) -> object:
        r = row("ops/k.py::k", "add", "add", "identical")
        new = Metrics(**{**r.new.__dict__, "regs": regs})
        return dataclasses.replace(r, spec=f"BLOCK=1024 MODE={mode} w4 s3", new=new,
                                   spec_detail=SpecDetail(constexprs={"BLOCK": 1024, "MODE": mode}))

    def info(k: int) -> CommitInfo:
        return CommitInfo(f"{k}" * 40, f"{k}" * 10, "A", 1_700_000_000 + k, f"c{k}", f"c{k}", ())
    events = [Event(info(1), "ops/k.py::k", [spec(0, 32), spec(1, 223)]),
              Event(info(2), "ops/k.py::k", [spec(1, 223), spec(0, 32)]),
              Event(info(3), "ops/k.py::k", [spec(0, 24), spec(1, 223)])]
    page = history_page(events, read_source)
    legend = page.split('<div class="legend">')[1].split("</div>")[0]
    assert "MODE=0" in legend and "MODE=1" in legend and "BLOCK" not in legend   # named by what differs
    chart = page.split("<svg")[1]                                               # registers per thread
    lines = re.findall(r'<polyline class="line (s\d)" points="([^"]*)"><title>([^<]*)</title>', chart)
    heights = {name: [float(p.split(",")[1]) for p in points.split()] for _, points, name in lines}
    assert sorted(heights) == ["MODE=0", "MODE=1"]
    assert len(set(heights["MODE=1"])) == 1                     # 223 in every commit: a flat line
    assert heights["MODE=0"][0] == heights["MODE=0"][1] != heights["MODE=0"][2]   # 32, 32, 24


def test_a_long_log_page_keeps_each_ptx_and_sass_text_once():
    """Issue 38: a 292-row log was 53 MB, each row carrying both sides' PTX and SASS; a commit is
    the new side of one row and the old side of the next, and a spec that did not change has the
    same text in every commit: each text is kept once, the rows point at it."""
    from ptxdiff.compare.history import Event
    from ptxdiff.git.values import CommitInfo

    def info(k: int) -> CommitInfo:
        return CommitInfo(f"{k:040d}", f"{k:010d}", "A", 1_700_000_000 + k, f"c{k}", f"c{k}", ())
    tags = ["add", "mul"]
    events = [Event(info(k), "ops/add.py::add_kernel",
                    [dataclasses.replace(row("ops/add.py::add_kernel", tags[(k - 1) % 2] if k else None,
                                             tags[k % 2], "structural" if k else "added"), spec=f"MODE={s} w4 s3")
                     for s in range(6)]) for k in range(49)]
    page = history_page(events, read_source)
    assert page.count('<details class="row"') == 294
    data = {m.group(1): m.group(2) for m in re.finditer(r'<script type="application/json" id="([^"]+)">(.*?)</script>',
                                                        page)}
    def block(name: str) -> list[str]:
        return rebuilt(json.loads(zlib.decompress(base64.b64decode(json.loads(data[name])["z"]))))
    texts, views = block("texts"), block("views")
    refs = [json.loads(v)["ref"] for k, v in data.items() if k.startswith(("ptx-", "sass-"))]
    assert len(refs) == 2 * 294 and all(r.startswith("v-") for r in refs)    # the rows' views: in their own block
    shared = {s["ref"] for r in refs for s in json.loads(views[int(r[2:])])["sides"]}
    assert len(shared) == 4 and len(texts) == 6                  # add and mul, PTX and SASS; their source files
    assert {json.loads(v)["ref"] for k, v in data.items() if k.startswith("src-")} == {"t-4", "t-5"}   # each once
    assert "tl.load" in texts[4] and "tl.load" in texts[5]
    assert ".entry KERNEL" not in page                       # deflated: no PTX text inline
    assert texts[0].startswith(".version") and len(data["texts"]) < sum(map(len, texts)) / 2
