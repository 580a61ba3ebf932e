"""GPU targets we compile for, and the per-architecture limits that decide occupancy.

Limits are the CUDA occupancy calculator's figures per compute capability (registers per SM,
warps, blocks, shared memory, allocation granularity).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ptxdiff.errors import UsageError


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


@dataclass(frozen=True)
class Device:
    """What a kernel module's host code would learn about the GPU, answered for a compile target:
    capability checks and shared-memory queries take the target's branch, not this machine's."""

    cc: int
    name: str
    sms: int
    smem_optin: int            # max dynamic shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin)
    threads_per_sm: int
    l2_bytes: int
    memory_bytes: int = 80 * 2**30

    @classmethod
    def for_target(cls, cc: int) -> Device:
        return DEVICES[cc]

    def triton_properties(self) -> dict[str, int]:
        """`triton.runtime.driver.active.utils.get_device_properties(i)`."""
        return {"max_shared_mem": self.smem_optin, "max_num_regs": LIMITS[self.cc].regs_per_sm,
                "multiprocessor_count": self.sms, "warpSize": 32, "sm_clock_rate": 1_755_000,
                "mem_clock_rate": 2_619_000, "mem_bus_width": 5120}

    def torch_properties(self) -> dict[str, object]:
        """`torch.cuda.get_device_properties(i)`."""
        return {"name": self.name, "major": self.cc // 10, "minor": self.cc % 10,
                "multi_processor_count": self.sms, "total_memory": self.memory_bytes,
                "shared_memory_per_block": 48 * 1024, "shared_memory_per_block_optin": self.smem_optin,
                "shared_memory_per_multiprocessor": LIMITS[self.cc].smem_per_sm,
                "max_threads_per_multi_processor": self.threads_per_sm,
                "regs_per_multiprocessor": LIMITS[self.cc].regs_per_sm, "warp_size": 32,
                "L2_cache_size": self.l2_bytes, "is_integrated": False, "is_multi_gpu_board": False}


DEVICES: dict[int, Device] = {
    80: Device(80, "NVIDIA A100-SXM4-80GB", 108, 166912, 2048, 40 * 2**20),
    86: Device(86, "NVIDIA A10", 72, 101376, 1536, 6 * 2**20, 24 * 2**30),
    89: Device(89, "NVIDIA L40S", 142, 101376, 1536, 96 * 2**20, 48 * 2**30),
    90: Device(90, "NVIDIA H100 80GB HBM3", 132, 232448, 2048, 50 * 2**20),
    100: Device(100, "NVIDIA B200", 148, 232448, 2048, 126 * 2**20, 180 * 2**30),
    120: Device(120, "NVIDIA GeForce RTX 5090", 170, 101376, 1536, 96 * 2**20, 32 * 2**30),
}
