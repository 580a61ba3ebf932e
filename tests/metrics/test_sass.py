"""sass.py on real cuobjdump / ptxas output (tests/data/ptx) and small hand-written listings."""

from __future__ import annotations

import re

import pytest

from helpers import DATA
from ptxdiff.metrics import sass

PTX = DATA / "ptx"


def read(name: str) -> str:
    return (PTX / name).read_text()


# -- cuobjdump -res-usage ---------------------------------------------------------------------------

def test_resource_usage_of_add_kernel():
    res = sass.resource_usage(read("add.sass"), "add_kernel")
    assert res == sass.Resources(regs=14, stack_bytes=0, shared_bytes=0, local_bytes=0)


def test_resource_usage_with_stack_and_shared():
    # spill kernel compiled with maxnreg=24: "REG:24 STACK:232 SHARED:1024 LOCAL:0 ..."
    res = sass.resource_usage(read("spill.res"), "spill_kernel")
    assert res == sass.Resources(regs=24, stack_bytes=232, shared_bytes=1024, local_bytes=0)


def test_resource_usage_ignores_common_section():
    text = read("spill.res")
    assert "GLOBAL:28" in text  # the Common: entry is not a function
    assert sass.resource_usage(text).regs == 24


MULTI = """
Resource usage:
 Common:
  GLOBAL:0
 Function helper:
  REG:8 STACK:16 SHARED:0 LOCAL:0 CONSTANT[0]:352 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function main_kernel:
  REG:40 STACK:0 SHARED:2048 LOCAL:4 CONSTANT[0]:576 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_resource_usage_picks_the_named_function():
    assert sass.resource_usage(MULTI, "main_kernel") == sass.Resources(40, 0, 2048, 4)
    assert sass.resource_usage(MULTI, "helper") == sass.Resources(8, 16, 0, 0)


def test_resource_usage_falls_back_to_first_function():
    assert sass.resource_usage(MULTI).regs == 8
    assert sass.resource_usage(MULTI, "not_there").regs == 8


def test_resource_usage_without_entries_is_an_error():
    with pytest.raises(ValueError):
        sass.resource_usage("\nResource usage:\n Common:\n  GLOBAL:0\n")
    with pytest.raises(ValueError):
        sass.resource_usage("")


# -- SASS listing -----------------------------------------------------------------------------------

def _listing_count(text: str) -> int:
    """Non-NOP instructions of a cuobjdump -sass listing: the disassembler's own count."""
    ops = re.findall(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", text, re.M)
    return sum(1 for op in ops if op != "NOP")


def test_sass_instrs_from_cubin_matches_the_disassembler():
    listing = read("add.sass")
    assert listing.count("NOP") >= 9  # the padding really is there and must not count
    assert _listing_count(listing) == 23
    assert sass.sass_instrs((PTX / "add.cubin").read_bytes(), "add_kernel") == 23
    assert sass.sass_instrs((PTX / "fma.cubin").read_bytes(), "axpy_kernel") == _listing_count(read("fma.sass")) == 27


def test_sass_instrs_unknown_function_falls_back_to_the_only_text_section():
    assert sass.sass_instrs((PTX / "add.cubin").read_bytes(), "renamed") == 23


def test_sass_instrs_rejects_what_is_not_a_cubin():
    with pytest.raises(ValueError):
        sass.sass_instrs(b"not an elf at all", "k")


# -- ptxas -v ---------------------------------------------------------------------------------------

def test_ptxas_log_without_spills():
    log = sass.ptxas_log(read("add.ptxas.log"))
    assert log == sass.PtxasLog(regs=14, stack_bytes=0, spill_store_bytes=0, spill_load_bytes=0)


def test_ptxas_log_real_spills():
    log = sass.ptxas_log(read("spill.ptxas.log"))
    assert log == sass.PtxasLog(regs=24, stack_bytes=232, spill_store_bytes=260, spill_load_bytes=328)


def test_ptxas_log_classic_format():
    text = ("ptxas info    : 0 bytes gmem\n"
            "ptxas info    : Compiling entry function 'k' for 'sm_80'\n"
            "ptxas info    : Function properties for k\n"
            "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
            "ptxas info    : Used 30 registers, 380 bytes cmem[0]\n")
    assert sass.ptxas_log(text) == sass.PtxasLog(30, 8, 4, 4)


def test_ptxas_log_partial_and_empty():
    assert sass.ptxas_log("") == sass.PtxasLog(None, None, None, None)
    assert sass.ptxas_log("ptxas info    : Used 12 registers, used 0 barriers\n") == \
        sass.PtxasLog(12, None, None, None)
    only_frame = "ptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, " \
                 "0 bytes spill loads\n"
    assert sass.ptxas_log(only_frame) == sass.PtxasLog(None, 0, 0, 0)


def test_ptxas_log_with_a_noinline_helper():
    text = read("noinline.ptxas.log")
    assert sass.ptxas_log(text) == sass.PtxasLog(10, 0, 0, 0)
    # the helper's properties come after the kernel's; they must not replace the kernel's
    kernel_spills = text.replace(
        "caller_kernel\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
        "caller_kernel\n    48 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads")
    assert kernel_spills != text
    assert sass.ptxas_log(kernel_spills) == sass.PtxasLog(10, 48, 8, 12)


def test_resource_usage_of_kernel_with_helper():
    assert sass.resource_usage(read("noinline.res"), "caller_kernel").regs == 10


# -- the SASS listing the HTML report shows ----------------------------------------------------------

def test_normalise_sass_keeps_one_instruction_a_line_and_drops_addresses_encodings_and_nops():
    text = sass.normalise_sass(read("add.nvdisasm"))
    lines = text.splitlines()
    assert lines[:3] == ["add_kernel:", "LDC R1, c[0x0][0x28]", "S2R R0, SR_TID.X"]
    assert "FADD R11, R11, R0" in lines and "@!P0 LDG.E R0, desc[UR4][R2.64]" in lines
    assert not re.search(r"/\*|0x[0-9a-f]{16}|;|^NOP$|\.text\.", text, re.M)
    # every instruction the cubin holds, the alignment NOPs out, as sass_instrs counts them
    assert len([x for x in lines if not x.endswith(":")]) == sass.sass_instrs((PTX / "add.cubin").read_bytes(), "add_kernel")


def test_normalise_sass_reads_cuobjdump_the_same_and_masks_absolute_jump_targets():
    from_cuobjdump = sass.normalise_sass(read("add.sass")).splitlines()
    from_nvdisasm = [x for x in sass.normalise_sass(read("add.nvdisasm")).splitlines() if not x.startswith(".L_x_")]
    assert from_cuobjdump[:-1] == from_nvdisasm[:-1]             # the same instructions from either tool
    assert from_cuobjdump[-1] == "BRA ." and from_nvdisasm[-1] == "BRA `(.L_x_0)"


def test_normalise_sass_cuts_a_long_listing_at_a_line_and_says_so():
    text = sass.normalise_sass(read("add.nvdisasm"), max_chars=100)
    *kept, last = text.splitlines()
    assert last == f"// SASS cut at {len(kept)} lines (of {len(sass.normalise_sass(read('add.nvdisasm')).splitlines())})"
    assert len("".join(f"{x}\n" for x in kept)) <= 100 and kept[0] == "add_kernel:"
