"""targets.py: target spellings and theoretical occupancy, checked against hand-worked cases.

The occupancy rules (CUDA occupancy calculator, cc >= 8.0): registers go to a warp in units of
256 (regs x 32 rounded up), the 64K register file is split into 4 partitions of 16K each; a block
takes its shared memory plus 1 KiB reserved by the runtime, rounded up to 128 bytes; blocks per
SM = min(max blocks, max warps / warps per block, register limit, shared-memory limit).
"""

from __future__ import annotations

import pytest

from ptxdiff.errors import PtxdiffError, UsageError
from ptxdiff.targets import LIMITS, occupancy, parse_target, target_name

KiB = 1024


@pytest.mark.parametrize("text,cc", [
    ("sm_90", 90), ("sm90", 90), ("90", 90), (" sm_90 ", 90), ("sm_90a", 90), ("90a", 90),
    ("sm_80", 80), ("sm_86", 86), ("sm_89", 89), ("sm_100", 100), ("sm_100a", 100), ("sm_120", 120),
])
def test_parse_target_accepts(text, cc):
    assert parse_target(text) == cc


@pytest.mark.parametrize("text", [
    "sm_75", "sm_70", "75", "", "sm_", "sm", "compute_90", "sm-90", "sm_9O", "gfx90a", "sm_90b",
    "sm_90,sm_80", "sm_900", "cuda:90", "sm__90",
])
def test_parse_target_rejects(text):
    with pytest.raises(UsageError) as info:
        parse_target(text)
    message = str(info.value)
    assert repr(text) in message
    assert "sm_80" in message and "sm_90" in message and "sm_120" in message  # says what is known


def test_usage_error_exit_code():
    assert issubclass(UsageError, PtxdiffError) and UsageError.exit_code == 2


def test_target_name_round_trips():
    for cc in LIMITS:
        assert parse_target(target_name(cc)) == cc
    assert target_name(90) == "sm_90"


def test_design_targets_are_all_known():
    assert set(LIMITS) == {80, 86, 89, 90, 100, 120}


@pytest.mark.parametrize("cc,regs,warps,shared,expected", [
    # 32 regs -> 1024/warp -> 16 warps per partition -> 64 warps; 16 blocks of 4 warps: full
    (90, 32, 4, 0, 1.0),
    # 128 regs -> 4096/warp -> 4 per partition -> 16 warps -> 4 blocks of 4 warps
    (90, 128, 4, 0, 0.25),
    # 255 regs -> ceil(255*32/256)=32 units = 8192/warp -> 2 per partition -> 8 warps -> 2 blocks
    (90, 255, 4, 0, 0.125),
    (90, 255, 8, 0, 0.125),
    # 16 warps x 8192 regs > 64K: the block does not fit at all
    (90, 255, 16, 0, 0.0),
    # 33 regs -> 5 units = 1280/warp -> 12 per partition -> 48 warps -> 12 blocks of 4
    (90, 33, 4, 0, 0.75),
    # 40 regs -> 1280/warp: 65536/1280 = 51.2 warps, but per 16K partition only 12 -> 48 warps:
    # 24 blocks of 2 warps (not 25), 16 blocks of 3 warps (not 17)
    (90, 40, 2, 0, 0.75),
    (90, 40, 3, 0, 0.75),
    # 64 regs, 8 warps: 2048/warp -> 8 per partition -> 32 warps -> 4 blocks of 8
    (90, 64, 8, 0, 0.5),
    # shared-memory limited: 100 KiB + 1 KiB reserved = 103424 B; 228 KiB // that = 2 blocks
    (90, 32, 4, 100 * KiB, 0.125),
    # 48 KiB + 1 KiB = 50176 B; 233472 // 50176 = 4 blocks
    (90, 32, 4, 48 * KiB, 0.25),
    # rounding of shared memory to 128 B: 1 B + 1 KiB -> 1152 B, 202 blocks fit; warps limit (16)
    (90, 32, 4, 1, 1.0),
    # sm_80: 164 KiB // 50176 = 3 blocks of 4 warps
    (80, 32, 4, 48 * KiB, 0.1875),
    (80, 64, 4, 0, 0.5),
    # sm_86: 48 warps per SM; 4-warp blocks: 12 blocks -> 48/48
    (86, 32, 4, 0, 1.0),
    # sm_86: 1-warp blocks are capped by the 16-block limit: 16/48
    (86, 32, 1, 0, 0.3333),
    # sm_86, 64 regs: 32 warps by registers -> 8 blocks -> 32/48
    (86, 64, 4, 0, 0.6667),
    # sm_86: 100 KiB per SM; 48 KiB blocks -> 2 blocks -> 8/48
    (86, 32, 4, 48 * KiB, 0.1667),
    # sm_86: 100 KiB + reserved does not fit
    (86, 32, 4, 100 * KiB, 0.0),
    # sm_89: 24-block limit with 1-warp blocks -> 24/48
    (89, 32, 1, 0, 0.5),
    # sm_120: 48 warps, 32 blocks
    (120, 32, 1, 0, 0.6667),
    (120, 32, 4, 0, 1.0),
    # regs unknown (0): no register limit
    (90, 0, 4, 0, 1.0),
    # 32-block limit on sm_90 with 1-warp blocks: 32/64
    (90, 16, 1, 0, 0.5),
])
def test_occupancy(cc, regs, warps, shared, expected):
    assert occupancy(cc, regs, warps, shared) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize("cc", sorted(LIMITS))
def test_occupancy_never_rises_with_more_registers_or_shared(cc):
    for warps in (1, 2, 4, 8, 16, 32):
        prev = 1.0
        for regs in range(1, 256, 7):
            occ = occupancy(cc, regs, warps, 0)
            assert 0.0 <= occ <= prev + 1e-9
            prev = occ
        prev = 1.0
        for shared in range(0, 100 * KiB, 4 * KiB):
            occ = occupancy(cc, 32, warps, shared)
            assert 0.0 <= occ <= prev + 1e-9
            prev = occ
