"""The pictures of the HTML report (`--format html`): a `diff` and a `log` of a real
repository, each page opened in headless chromium with a row open, as PNG files in docs/.

    python benchmarks/html_screenshots.py REPO --diff A B [--paths PATH ...] \\
        --log KERNEL [--range A..B] [--out docs] [--keep DIR]

The `diff` picture opens its first structural row (its PTX side by side, the source beside it);
the `log` picture shows the charts and, below them, its first structural row. Each page is also
checked as the tests check it: the script ran to its end and the console said nothing. The
pictures linked from the README (linkedin/Liger-Kernel, see its section "The HTML report"):

    python benchmarks/html_screenshots.py ~/src/Liger-Kernel --diff b7025a70~1 b7025a70 \\
        --paths src/liger_kernel/ops/fused_add_rms_norm.py \\
        --log src/liger_kernel/ops/fused_add_rms_norm.py::_fused_add_rms_norm_backward_kernel
"""

from __future__ import annotations

import argparse
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTXDIFF = [sys.executable, "-m", "ptxdiff"]


def chromium() -> str:
    found = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
    if found is None:
        sys.exit("needs chromium (Debian: apt-get install chromium)")
    return found


def page(args: list[str], out: Path, paths: Sequence[str] = ()) -> str:
    """Run ptxdiff with `--format html -o out` (and `-- paths`) and return the page."""
    cmd = [*PTXDIFF, *args, "--format", "html", "-o", str(out), *(["--", *paths] if paths else [])]
    print("$", " ".join(cmd[2:]), file=sys.stderr)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return out.read_text(encoding="utf-8")


def opened(html: str, verdict: str = "structural") -> str:
    """The page with its first row of `verdict` (else its first row) open, as a reader clicks it."""
    m = re.search(rf'<details class="row" id="(r\d+)" data-verdict="{verdict}"', html) or \
        re.search(r'<details class="row" id="(r\d+)"', html)
    if m is None:
        return html
    return html.replace(f'<details class="row" id="{m.group(1)}"', f'<details class="row" id="{m.group(1)}" open', 1)


def smaller(png: bytes) -> bytes:
    """The same picture with its pixel data deflated at zlib's best level (chromium writes fast)."""
    chunks, pos, pixels = [], 8, b""
    while pos < len(png):
        (n,), kind = struct.unpack(">I", png[pos:pos + 4]), png[pos + 4:pos + 8]
        data, pos = png[pos + 8:pos + 8 + n], pos + 12 + n
        if kind == b"IDAT":
            pixels += data
            continue
        if kind == b"IEND":
            chunks.append((b"IDAT", zlib.compress(zlib.decompress(pixels), 9)))
        chunks.append((kind, data))
    return png[:8] + b"".join(struct.pack(">I", len(d)) + k + d + struct.pack(">I", zlib.crc32(k + d)) for k, d in chunks)


def shoot(browser: str, html: str, png: Path, size: str, scale: str, work: Path) -> None:
    """A screenshot of `html` at `size` (WIDTH,HEIGHT), checked as the tests check a page."""
    path = work / (png.stem + ".html")
    path.write_text(html, encoding="utf-8")
    base = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", f"--user-data-dir={work / 'p'}",
            "--enable-logging=stderr", "--v=0", "--host-resolver-rules=MAP * ~NOTFOUND"]
    dom = subprocess.run([*base, "--dump-dom", path.as_uri()], capture_output=True, text=True, check=True)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    if console or 'data-ready="1"' not in dom.stdout:
        sys.exit(f"{png.name}: the page did not load cleanly: {console}")
    subprocess.run([*base, f"--window-size={size}", f"--force-device-scale-factor={scale}", f"--screenshot={png}",
                    path.as_uri()], capture_output=True, check=True)
    png.write_bytes(smaller(png.read_bytes()))
    print(f"{png}: {png.stat().st_size // 1024} KiB", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo")
    ap.add_argument("--diff", nargs=2, metavar=("A", "B"), required=True)
    ap.add_argument("--paths", nargs="*", default=[])
    ap.add_argument("--log", metavar="KERNEL", required=True)
    ap.add_argument("--range", help="the log's range, A..B")
    ap.add_argument("--out", default=str(ROOT / "docs"))
    ap.add_argument("--keep", metavar="DIR", help="also keep the pages there")
    ap.add_argument("--size", default="1400,2500", help="the window in CSS pixels, WIDTH,HEIGHT (default 1400,2500)")
    ap.add_argument("--scale", default="0.6", help="device pixels per CSS pixel (default 0.6: a picture under 300 KB)")
    args = ap.parse_args()
    browser, out = chromium(), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        diff = page(["-C", args.repo, "diff", *args.diff], work / "diff.html", args.paths)
        shoot(browser, opened(diff), out / "html-diff.png", args.size, args.scale, work)
        log = page(["-C", args.repo, "log", args.log, *([args.range] if args.range else [])], work / "log.html")
        shoot(browser, opened(log), out / "html-log.png", args.size, args.scale, work)


if __name__ == "__main__":
    main()
