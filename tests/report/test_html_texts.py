"""The log page's texts block (report/html_texts.py): each text comes back exactly (as the page's
script rebuilds it: html_samples.rebuilt, step for step), whatever its numbers, digits, marks and
line ends; a text whose registers renumber costs a few numbers against its base; and the block is
smaller than the texts deflated one by one."""

from __future__ import annotations

import base64
import json
import zlib

from html_samples import rebuilt

from ptxdiff.report.html_texts import MARKS, bundle, encoded, mark


def ptx(n: int, extra: str = "", shift: int = 0) -> str:
    return "\n".join([".version 8.4", ".target sm_90", *(f"\tadd.s32 %r{k + shift}, %r{k + shift + 1}, {k * 7};"
                                                          for k in range(n)), extra, "\tret;", "}", ""])


def block_of(texts: list[str]) -> dict:
    return json.loads(zlib.decompress(base64.b64decode(bundle(texts)["z"])))


ODD = ["", "\n\n", "x\r\ny\u2028z\x85", "007 0x00f0 12345678901234567890 -3 1e-06 4294967296",
       "\u0663\u0664 %r\u0663 ١٢ R1\U0001F600 7 \U0001F6007 \ud800 9",   # digits not ASCII; an astral and a lone surrogate
       "~ ^ ` | # %r1 R2", "\ue000 5", "[%rd12+8], %f3;\n[%rd13+8], %f4;", "a1b2c3\na1b2c3\na2b3c4"]


def test_every_text_comes_back_exactly():
    texts = [ptx(400), ptx(400, "\tmul.f32 %f1, %f2, %f3;"), *ODD, ptx(401, shift=3), ptx(3), *ODD, ptx(400)]
    assert rebuilt(block_of(texts)) == texts
    assert rebuilt(block_of([])) == [] and rebuilt(block_of([""])) == [""]


def test_the_mark_is_a_character_no_text_has():
    assert mark(["%r1 R2"]) == MARKS[0]
    assert mark([MARKS + "\ue000"]) == "\ue001"
    data = encoded(["a ~1", "b ^2", "c `3 |4 #5"])
    assert data["mark"] == "\ue000" and rebuilt(json.loads(json.dumps(data))) == ["a ~1", "b ^2", "c `3 |4 #5"]


def test_a_text_whose_registers_renumber_is_its_bases_lines_and_a_few_numbers():
    """The next commit's PTX: one instruction more at the top, every register after it one higher."""
    texts = [ptx(2000), ptx(2000, shift=1)]
    data = encoded(texts)
    assert len(data["forms"]) < 10                                   # the masked lines: a handful
    base, ops = data["texts"][1]
    assert base == 0 and len(ops) <= 6                               # the base's lines, in a run or two
    assert len(data["nums"][1]) <= 6                                 # the shift, said once per kind of number
    assert rebuilt(data) == texts


def test_the_block_is_smaller_than_the_texts_deflated_one_by_one():
    texts = [ptx(2000 + k, f"\tmul.f32 %f{k}, %f2, %f3;", shift=k % 3) for k in range(8)]
    block = bundle(texts)
    assert rebuilt(json.loads(zlib.decompress(base64.b64decode(block["z"])))) == texts
    alone = sum(len(base64.b64encode(zlib.compress(t.encode(), 9))) for t in texts)
    assert len(block["z"]) < alone / 6
