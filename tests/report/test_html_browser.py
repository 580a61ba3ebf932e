"""The HTML report in a real browser (Debian's chromium, headless; .ci/run installs it): the rows
are there after the script ran, nothing is logged to the console (a script error, or a request
the page's policy refused, would be), the page works with every host unresolvable and the proxy
a dead port, a structural row's screenshot shows both sides (and its SASS view, opened, both
sides), hostile names stay text, a 400-row
`show` opens with no row expanded, without JavaScript the table and facts still read, and at
1400 px a long PTX line leaves both sides on the screen."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from html_samples import diff_report, history, read_source, show_report

from ptxdiff.report.html import history_page, report_page

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = [pytest.mark.integration, pytest.mark.browser,   # each test starts chromium
              pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (Debian: apt-get install "
                                                          "chromium; .ci/run installs it)")]

OFFLINE = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]


def chromium(tmp_path: Path, url: str, *flags: str) -> tuple[str, list[str]]:
    """(what --dump-dom printed, the console's lines) for `url`, with no network."""
    assert CHROMIUM is not None
    proc = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0", *OFFLINE,
                           *flags, url], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


def dom(tmp_path: Path, page: str, fragment: str = "", *flags: str) -> str:
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    out, console = chromium(tmp_path, path.as_uri() + fragment, "--dump-dom", *flags)
    assert console == []
    return out


def pixels(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG, as chromium writes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, head = 8, b"", b""
    while pos < len(png):
        (n,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        if kind == b"IHDR":
            head = png[pos + 8:pos + 8 + n]
        elif kind == b"IDAT":
            idat += png[pos + 8:pos + 8 + n]
        pos += 12 + n
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", head)
    assert depth == 8 and interlace == 0 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, rows


def columns_of(rows: list[bytes], width: int, rgb: tuple[int, int, int]) -> list[int]:
    """The x of every pixel of colour `rgb`."""
    bpp = len(rows[0]) // width
    want = bytes(rgb)
    return [x for row in rows for x in range(width) if row[x * bpp:x * bpp + 3] == want]


def test_a_diff_page_renders_its_rows_and_a_rows_view_with_no_error_and_no_network(tmp_path):
    out = dom(tmp_path, report_page(diff_report(), read_source), "#r0")
    assert 'data-ready="1"' in out                                   # the script ran to its end
    assert out.count('<tr data-href="r') == 3
    assert '<table class="ptx two">' in out                          # #r0 opened the row and drew both sides
    assert 'class="s link"' in out and '<ol class="srclines">' in out   # lines linked, the source beside them
    assert "x = tl.load(x_ptr + offs, mask=mask)" in out
    assert '<div id="filters">' in out                               # the filters shown (hidden without script)


def test_hostile_names_and_errors_stay_text_in_the_browser(tmp_path):
    out = dom(tmp_path, report_page(diff_report(hostile=True), read_source), "#r0")
    assert 'data-pwned="1"' not in out and "<img" not in out
    assert "&lt;script&gt;document.body.setAttribute" in out
    assert "<title>ptxdiff" in out                                    # onerror never set the title


def test_a_screenshot_of_a_structural_row_shows_both_sides(tmp_path):
    page = report_page(diff_report(), read_source).replace('<details class="row" id="r0"',
                                                           '<details class="row" id="r0" open', 1)
    path, shot = tmp_path / "page.html", tmp_path / "row.png"
    path.write_text(page, encoding="utf-8")
    _, console = chromium(tmp_path, path.as_uri(), f"--screenshot={shot}", "--window-size=1400,1600",
                          "--hide-scrollbars")
    assert console == []
    width, _, rows = pixels(shot.read_bytes())
    removed = columns_of(rows, width, (0xFF, 0xEB, 0xE9))              # the old side's changed line
    added = columns_of(rows, width, (0xDA, 0xFB, 0xE1))                # the new side's
    assert removed and added, "both sides of the changed line are drawn"
    assert max(removed) < min(added), "old on the left, new on the right"


def test_a_structural_rows_sass_view_shows_both_sides_when_opened(tmp_path):
    page = report_page(diff_report(), read_source)
    assert dom(tmp_path, page, "#r0").count('<table class="ptx two">') == 1   # the PTX; the SASS waits, folded
    opened = dom(tmp_path, page.replace('<details class="sass">', '<details class="sass" open>', 1), "#r0")
    sass = opened[opened.index('<details class="sass" open="">'):]
    sass = sass[:sass.index("</details>")]
    assert sass.count('<table class="ptx two">') == 1 and "Old and new normalised SASS, aligned" in sass
    changed = re.findall(r'<tr class="chg">(.*?)</tr>', sass)
    assert len(changed) == 1 and "FADD R11, R11, R0" in changed[0] and "FMUL R11, R11, R0" in changed[0]
    assert changed[0].index("FADD") < changed[0].index("FMUL")       # old on the left, new on the right


def test_a_400_row_show_opens_with_no_row_expanded(tmp_path):
    out = dom(tmp_path, report_page(show_report(400), read_source))
    assert out.count('<tr data-href="r') == 400 and 'data-ready="1"' in out
    assert '<table class="ptx' not in out                              # every PTX view waits to be opened
    opened = dom(tmp_path, report_page(show_report(400), read_source), "#r399")
    assert opened.count('<table class="ptx one">') == 1


def test_a_log_page_draws_its_charts_and_opens_a_row(tmp_path):
    """A log's texts are kept once, deflated: the row's view is drawn once they are inflated."""
    out = dom(tmp_path, history_page(history(), read_source), "#r2", "--virtual-time-budget=5000")
    assert out.count("<svg") == 5 and 'data-ready="1"' in out
    assert '<table class="ptx two">' in out and "mul.f32" in out and "add.f32" in out
    assert '<ol class="srclines">' in out and "tl.load" in out          # its source, a text of the block too


def test_without_javascript_the_table_and_the_facts_still_read(tmp_path):
    """The page's policy set to refuse its own script: what a reader with JavaScript off sees."""
    page = re.sub(r"script-src '[^']+'", "script-src 'none'", report_page(diff_report(), read_source), count=1)
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    out, console = chromium(tmp_path, path.as_uri(), "--dump-dom")
    assert len(console) == 1 and "Content Security Policy" in console[0]     # the one refusal, and nothing else
    assert 'data-ready="1"' not in out
    assert out.count('<tr data-href="r') == 3 and "<dd>add.f32 -1, mul.f32 +1</dd>" in out
    assert "The side-by-side PTX view needs JavaScript." in out
    assert '<div id="filters" hidden="">' in out                      # controls that need the script stay hidden


FIT_PROBE = """<script>
var names = Array.prototype.slice.call(document.querySelectorAll("td.kname a"));
var broken = names.filter(function (a) {   // a name's piece between two break points on more than one line
  return Array.prototype.slice.call(a.childNodes).some(function (n) {
    if (n.nodeType !== 3) { return false; }
    var r = document.createRange(); r.selectNodeContents(n); return r.getClientRects().length > 1;
  });
}).length;
var rows = Array.prototype.slice.call(document.querySelectorAll("table.rows tbody tr"));
var seen = rows.filter(function (tr) { return tr.getBoundingClientRect().bottom <= window.innerHeight; }).length;
document.body.setAttribute("data-fit", JSON.stringify({seen: seen, broken: broken, width: window.innerWidth,
  overflow: document.documentElement.scrollWidth - window.innerWidth, height: window.innerHeight}));
</script></body>"""


def test_at_1400_px_a_screen_shows_ten_kernels_names_break_at_folders_only_and_nothing_overflows(tmp_path):
    """Issue 38: a real range's many guessed specs (deep kernel ids, long specs, 6 specs a kernel)
    at a reviewer's 1400 x 1000: a line per kernel, at least 10 of them on the first screen, names
    broken after `/` and `::` only, no horizontal scrolling."""
    import json

    from html_samples import many_kernels
    page = report_page(many_kernels(20, 6), read_source)
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)   # the probe's script
    page = page.replace("</body>", FIT_PROBE, 1)
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    out, _ = chromium(tmp_path, path.as_uri(), "--dump-dom", "--window-size=1400,1000", "--hide-scrollbars")
    fit = json.loads(re.search(r'data-fit="([^"]*)"', out).group(1).replace("&quot;", '"'))
    assert fit["width"] == 1400 and out.count('<tr data-href="r') == 20       # a line per kernel
    assert fit["seen"] >= 10 and fit["broken"] == 0 and fit["overflow"] <= 0, fit
    assert out.count('<details class="specs">') == 20 and out.count('<details class="row"') == 120   # specs unfold
    assert '20 kernels: 20 structural (120 spec rows); <span class="blocks">20 blocking</span>' in out


PANE_PROBE = """<script>
setTimeout(function () {   // after the views are drawn
  var w = window.innerWidth;
  var views = Array.prototype.slice.call(document.querySelectorAll(".viewgrid")).map(function (grid) {
    var code = grid.querySelector(".code"), box = code.getBoundingClientRect();
    var heads = Array.prototype.slice.call(grid.querySelectorAll("table.ptx thead th")).map(function (th) {
      var r = th.getBoundingClientRect(); return [r.left, r.right];
    });
    var cells = Array.prototype.slice.call(grid.querySelectorAll("table.ptx td.t"));
    return {heads: heads, right: box.right, hidden: code.scrollWidth - code.clientWidth,
            scrolls: getComputedStyle(code).overflowY,
            cut: cells.filter(function (td) { return td.scrollWidth > td.clientWidth + 1; }).length,
            reach: Math.max.apply(null, cells.map(function (td) { return td.getBoundingClientRect().right; })),
            long: cells.filter(function (td) { return td.textContent.indexOf("bwd_kernel_param_") >= 0; }).length};
  });
  document.body.setAttribute("data-panes", JSON.stringify({width: w, views: views,
    overflow: document.documentElement.scrollWidth - w}));
}, 200);
</script></body>"""


def test_at_1400_px_the_old_and_new_panes_of_a_long_line_both_fit_side_by_side(tmp_path):
    """Issue 38: a PTX (and SASS) line longer than half the screen wraps inside its own side, so
    at 1400 px both sides are on the screen (no side pushed out of view behind a horizontal
    scroll, no cell clipped), the source pane beside them, each view scrolling down on its own."""
    import json

    from html_samples import long_lines
    page = report_page(long_lines(), read_source).replace('<details class="sass">', '<details class="sass" open>', 1)
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page, count=1)   # the probe's script
    page = page.replace("</body>", PANE_PROBE, 1)
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    out, _ = chromium(tmp_path, path.as_uri() + "#r0", "--dump-dom", "--window-size=1400,1000", "--hide-scrollbars",
                      "--virtual-time-budget=2000")
    fit = json.loads(re.search(r'data-panes="([^"]*)"', out).group(1).replace("&quot;", '"'))
    assert fit["width"] == 1400 and fit["overflow"] <= 0 and len(fit["views"]) == 2, fit   # the PTX and the SASS
    for view in fit["views"]:
        (old_left, old_right), (new_left, new_right) = view["heads"]
        assert old_left < old_right <= new_left < new_right <= view["right"] <= 1400, view    # side by side, on screen
        assert view["hidden"] <= 0 and view["cut"] == 0 and view["reach"] <= view["right"], view   # nothing cut
        assert view["long"] == 2 and view["scrolls"] == "auto", view          # both long lines, wrapped in place
    assert out.count('class="source"') == 1                                   # the PTX's source pane beside it


SIDES_PROBE = """<script>
(function wait() {   // once the row's view is drawn: every fold opened, then each side's lines by number
  var table = document.querySelector("#r2 table.ptx");
  if (!table) { setTimeout(wait, 50); return; }
  var fold;
  while ((fold = table.querySelector("tr.fold button"))) { fold.click(); }
  var sides = [[], []];
  Array.prototype.slice.call(table.querySelectorAll("tbody tr")).forEach(function (tr) {
    [0, 1].forEach(function (s) {
      var n = tr.cells[3 * s].textContent;
      if (n) { sides[s][+n - 1] = tr.cells[3 * s + 2].textContent; }
    });
  });
  document.body.setAttribute("data-sides", JSON.stringify(sides));
})();
</script></body>"""


def test_a_log_rows_old_and_new_ptx_come_back_exactly_from_the_block(tmp_path):
    """Issue 38: a log's texts are kept as masked lines and numbers against a base (html_texts.py);
    the script rebuilds them: a commit whose registers all renumber, with a line that has the
    marks, a long number, leading zeros and an astral character before a number, shows both sides'
    PTX line for line, exactly."""
    import dataclasses
    import html
    import json

    from html_samples import side

    from ptxdiff.report.safe import shown
    old = side("add")[1]
    new = re.sub(r"%r(\d+)", lambda m: f"%r{int(m.group(1)) + 3}", old).replace(
        "\n", "\n\tmov.u32 %r1, 0x0007; // ~^`|# 12345678901234 \U0001F6007 \u0663\n", 1)
    events = history()
    last = events[2].rows[0]
    events[2] = dataclasses.replace(events[2], rows=[dataclasses.replace(last, old_ptx=old, new_ptx=new, old_loc=None,
                                                                         new_loc=None)])
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", history_page(events, read_source), count=1)
    page = page.replace("</body>", SIDES_PROBE, 1)
    assert "KERNEL_param_0" not in page                               # the texts are in the deflated block only
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    out, console = chromium(tmp_path, path.as_uri() + "#r2", "--dump-dom", "--virtual-time-budget=5000")
    assert console == []
    sides = json.loads(html.unescape(re.search(r'data-sides="([^"]*)"', out).group(1)))
    assert sides == [shown(old, lines=True).split("\n")[:-1], shown(new, lines=True).split("\n")[:-1]]
