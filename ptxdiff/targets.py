"""GPU targets we compile for, and the per-architecture limits that decide occupancy.

Limits are the CUDA occupancy calculator's figures per compute capability (registers per SM,
warps, blocks, shared memory, allocation granularity).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .errors import UsageError


@dataclass(frozen=True)
class Limits:
    max_warps: int
    max_blocks: int
    regs_per_sm: int = 65536
    reg_unit: int = 256            # registers are handed to a warp in chunks of this many
    warp_partitions: int = 4       # the register file is split in 4 sub-partitions
    smem_per_sm: int = 0           # bytes usable by blocks on one SM
    smem_unit: int = 128
    smem_reserved: int = 1024      # the runtime reserves this much per block (cc >= 8.0)


LIMITS: dict[int, Limits] = {
    80: Limits(max_warps=64, max_blocks=32, smem_per_sm=164 * 1024),
    86: Limits(max_warps=48, max_blocks=16, smem_per_sm=100 * 1024),
    89: Limits(max_warps=48, max_blocks=24, smem_per_sm=100 * 1024),
    90: Limits(max_warps=64, max_blocks=32, smem_per_sm=228 * 1024),
    100: Limits(max_warps=64, max_blocks=32, smem_per_sm=228 * 1024),
    120: Limits(max_warps=48, max_blocks=32, smem_per_sm=100 * 1024),
}


def parse_target(text: str) -> int:
    """`sm_90` / `sm90` / `90` -> 90; anything we hold no limits for is a usage error."""
    m = re.fullmatch(r"(?:sm_?)?(\d+)a?", text.strip())
    if not m or int(m.group(1)) not in LIMITS:
        known = ", ".join(f"sm_{cc}" for cc in LIMITS)
        raise UsageError(f"unknown target {text!r} (known: {known})")
    return int(m.group(1))


def target_name(cc: int) -> str:
    return f"sm_{cc}"


def occupancy(cc: int, regs: int, num_warps: int, shared_bytes: int) -> float:
    """Theoretical active warps per SM / max warps per SM, for one block size and resource use."""
    lim = LIMITS[cc]
    by_warps = lim.max_warps // num_warps
    if regs > 0:
        regs_per_warp = math.ceil(regs * 32 / lim.reg_unit) * lim.reg_unit
        warps_per_partition = (lim.regs_per_sm // lim.warp_partitions) // regs_per_warp
        by_regs = (warps_per_partition * lim.warp_partitions) // num_warps
    else:
        by_regs = lim.max_blocks
    smem = math.ceil((shared_bytes + lim.smem_reserved) / lim.smem_unit) * lim.smem_unit
    by_smem = lim.smem_per_sm // smem
    blocks = max(0, min(lim.max_blocks, by_warps, by_regs, by_smem))
    return round(blocks * num_warps / lim.max_warps, 4)
