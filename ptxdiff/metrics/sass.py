"""Reading what ptxas made: cuobjdump's resource usage, the cubin's SASS, and ptxas's -v log.

Pure parsing; running the tools is binaries.py's job.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

_RES_FUNCTION = re.compile(r"^\s*Function\s+([\w$]+):\s*$")
_RES_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")
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


# Volta and newer encode every SASS instruction in 16 bytes, the opcode in the low 12 bits.
_NOP_OPCODE = 0x918


def _elf_sections(cubin: bytes) -> dict[str, bytes]:
    """Section name -> contents of a 64-bit little-endian ELF (a cubin)."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        raise ValueError("not a 64-bit ELF cubin")
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name_off, _type, _flags, _addr, offset, size, *_ in headers:
        start = names_at + name_off
        out[cubin[start:cubin.index(b"\0", start)].decode()] = cubin[offset:offset + size]
    return out


def sass_instrs(cubin: bytes, function: str) -> int:
    """Instructions of `function` in the cubin, alignment NOPs left out.

    Read from the ELF directly: disassembling (cuobjdump -sass, nvdisasm) costs ~0.4 s per kernel,
    more than most compiles. Agrees with the disassembler's count on sm_80..sm_120 (tested).
    """
    sections = _elf_sections(cubin)
    text = sections.get(f".text.{function}")
    if text is None:
        texts = [v for k, v in sections.items() if k.startswith(".text.")]
        if not texts:
            raise ValueError(f"no .text section for {function} in the cubin")
        text = texts[0]
    words = (struct.unpack_from("<Q", text, i)[0] for i in range(0, len(text) - 15, 16))
    return sum(1 for w in words if w & 0xFFF != _NOP_OPCODE)


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


_SASS_INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;?\s*(?:/\*[^*]*\*/)?\s*$")
# a function, a branch target (not nvdisasm's section name, nor cuobjdump -res-usage's heading)
_SASS_LABEL = re.compile(r"^\s*((?!\.text\.|Common:)[A-Za-z_$.][\w$.]*):\s*$")
_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_SASS_JUMP = re.compile(r"^((?:@!?U?P\w+\s+)?(?:BRA|JMP|CALL|BSSY|SSY|PBK|PCNT)\b.*?)\b0x[0-9a-f]+\b")
SASS_MAX_CHARS = 256 * 1024     # a normalised listing longer than this is cut (the cache keeps it per spec)


def normalise_sass(dump: str, max_chars: int = SASS_MAX_CHARS) -> str:
    """`nvdisasm -c` (or `cuobjdump -sass`) as the HTML report shows it: one instruction a line
    (opcode and operands), the function and branch labels kept; addresses, encodings, comments,
    the alignment NOPs and absolute jump targets (`BRA 0x160`, which move with every shift)
    dropped. Longer than `max_chars`: cut at a line, and a last line says where."""
    out: list[str] = []
    for line in dump.splitlines():
        m = _SASS_INSTR.match(line)
        if m:
            instr = " ".join(m.group(1).split())
            if instr and instr != "NOP":
                out.append(_SASS_JUMP.sub(r"\1.", instr))
            continue
        m = _SASS_LABEL.match(line) or _SASS_FUNCTION.match(line)
        if m:
            out.append(f"{m.group(1)}:")
    text = "".join(f"{x}\n" for x in out)
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n", 0, max_chars) + 1
    kept = text.count("\n", 0, cut)
    return text[:cut] + f"// SASS cut at {kept} lines (of {len(out)})\n"
