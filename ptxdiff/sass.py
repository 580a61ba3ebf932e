"""Reading what ptxas made: cuobjdump's resource usage and SASS listing, and ptxas's -v log.

Pure parsing; running the tools is toolchain.py's job.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_RES_FUNCTION = re.compile(r"^\s*Function\s+([\w$]+):\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPS = re.compile(r"Function properties for ([^\s]+)\s*\n\s*" + _PTXAS_FRAME.pattern)


@dataclass(frozen=True)
class Resources:
    regs: int
    stack_bytes: int
    shared_bytes: int
    local_bytes: int


@dataclass(frozen=True)
class PtxasLog:
    regs: int | None
    stack_bytes: int | None
    spill_store_bytes: int | None
    spill_load_bytes: int | None


def resource_usage(text: str, function: str | None = None) -> Resources:
    """Parse `cuobjdump -res-usage`; `function` picks one entry when the cubin has several."""
    entries: dict[str, dict[str, int]] = {}
    name = None
    for line in text.splitlines():
        m = _RES_FUNCTION.match(line)
        if m:
            name = m.group(1)
            continue
        if name and "REG:" in line:
            entries[name] = {k: int(v) for k, v in _RES_FIELD.findall(line)}
            name = None
    if not entries:
        raise ValueError("cuobjdump printed no resource usage")
    fields = entries.get(function) if function else None
    fields = fields or next(iter(entries.values()))
    return Resources(regs=fields.get("REG", 0), stack_bytes=fields.get("STACK", 0),
                     shared_bytes=fields.get("SHARED", 0), local_bytes=fields.get("LOCAL", 0))


def sass_opcodes(text: str) -> Counter[str]:
    """Opcode histogram of a SASS listing (cuobjdump -sass or nvdisasm), padding NOPs left out."""
    counts: Counter[str] = Counter()
    for line in text.splitlines():
        m = _SASS_LINE.match(line)
        if m and m.group(1) != "NOP":
            counts[m.group(1)] += 1
    return counts


def ptxas_log(text: str) -> PtxasLog:
    regs = _PTXAS_REGS.findall(text)
    frame = _PTXAS_FRAME.findall(text)
    # ptxas lists a noinline .func's properties after the kernel's: prefer the entry function's
    entries = _PTXAS_ENTRY.findall(text)
    own = [m.groups()[1:] for m in _PTXAS_PROPS.finditer(text) if m.group(1) in entries]
    frame = own or frame
    if not frame:
        return PtxasLog(int(regs[-1]) if regs else None, None, None, None)
    stack, stores, loads = (int(x) for x in frame[-1])
    return PtxasLog(int(regs[-1]) if regs else None, stack, stores, loads)
