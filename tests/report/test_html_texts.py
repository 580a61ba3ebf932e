"""The log page's texts block (report/html_texts.py): each text comes back exactly, an alike text
is kept as its delta, and the block is smaller than the texts deflated one by one."""

from __future__ import annotations

import base64
import json
import zlib

from html_samples import rebuilt

from ptxdiff.report.html_texts import bundle, encoded


def ptx(n: int, extra: str = "") -> str:
    return "\n".join([".version 8.4", ".target sm_90", *(f"\tadd.s32 %r{k}, %r{k + 1}, {k * 7};" for k in range(n)),
                      extra, "\tret;", "}", ""])


def test_every_text_comes_back_exactly_and_alike_ones_are_deltas():
    texts = [ptx(400), ptx(400, "\tmul.f32 %f1, %f2, %f3;"), "", "\n\n", "x\r\ny\u2028z\x85", ptx(401), ptx(3)]
    items = encoded(texts)
    assert rebuilt(items) == texts
    assert isinstance(items[0], str) and items[1]["b"] == 0 and items[5]["b"] in (0, 1)   # type: ignore[index]
    assert isinstance(items[2], str)                              # nothing to gain: kept whole


def test_the_block_is_smaller_than_the_texts_deflated_one_by_one():
    texts = [ptx(2000 + k, f"\tmul.f32 %f{k}, %f2, %f3;") for k in range(8)]
    block = bundle(texts)
    assert rebuilt(json.loads(zlib.decompress(base64.b64decode(block["z"])))) == texts
    alone = sum(len(base64.b64encode(zlib.compress(t.encode(), 9))) for t in texts)
    assert len(block["z"]) < alone / 3
