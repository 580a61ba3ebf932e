"""Reading PTX text: normalisation, counts, and a register-name-free view for comparing.

Everything here is a pure function of the PTX text, so it is unit-tested on checked-in PTX.
The study counted only unpredicated lines and summed virtual registers; we count every
instruction (predicated ones included) and keep the study's register sum as `ptx_regs`.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"//[^\n]*")
# a debug section's body is `.b8`/`.b32` data and comments; `{ }` may also close on its own line
_DEBUG_SECTION = re.compile(r"^\s*\.section\s+\.debug\w*\s*\{(?:[^{}]*?\}|.*?^\s*\})", re.S | re.M)
_DEBUG_LINE = re.compile(r"^\s*(\.loc|\.file|@@DWARF)\b[^\n]*\n?", re.M)
_ENTRY = re.compile(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_REG_DECL = re.compile(r"\.reg\s+\.(\w+)\s+%(\w+?)(?:<(\d+)>)?\s*;")
_STATE_DECL = re.compile(r"\.(local|shared)\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$]+\s*\[(\d*)\]")
_LABEL_PREFIX = re.compile(r"^([A-Za-z_$][\w$]*)\s*:")
_REGISTER = re.compile(r"%[A-Za-z_]\w*?\d+\b")
_IMMEDIATE = re.compile(r"(?<![\w$%.])(?:0[fFdD][0-9A-Fa-f]+|0[xX][0-9A-Fa-f]+U?|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?U?)(?![\w$])")
_TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
               "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}
# Opcodes whose first operand is read, not written (stores, branches, barriers, async copies).
_NO_DEST = ("st", "red", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "prefetch",
            "cp", "mbarrier", "wgmma", "trap", "call", "griddepcontrol", "setmaxnreg", "stmatrix",
            "tcgen05", "elect")
# Opcodes whose place among a kernel's memory operations is part of what it computes (memory_order):
# writes, atomics, barriers and fences, async copies and tensor-core ops on shared memory, control flow.
_ORDERED = {"st", "stmatrix", "red", "atom", "bar", "barrier", "membar", "fence", "cp", "mbarrier",
            "wgmma", "tcgen05", "griddepcontrol", "call", "bra", "brx", "ret", "exit", "trap", "sust", "sured",
            "suatom", "multimem"}
# Loads from memory: may read what an ordered operation wrote.
_READS = {"ld", "ldu", "ldmatrix", "tex", "tld4", "suld"}
# Opcodes whose first two source operands commute (fma/mad: a*b+c).
_COMMUTATIVE = {"add", "mul", "mul24", "min", "max", "and", "or", "xor", "fma", "mad", "mad24"}


@dataclass(frozen=True)
class Instruction:
    predicate: str  # "" or the guard, e.g. "@%p1" / "@!%p1"
    opcode: str     # full mnemonic with modifiers, e.g. "ld.global.v4.b32"
    operands: tuple[str, ...]


@dataclass(frozen=True)
class PtxMetrics:
    ptx_regs: int
    ptx_regs_by_type: dict[str, int]
    ptx_instrs: int
    ptx_opcodes: dict[str, int]
    ptx_local_bytes: int
    ptx_shared_bytes: int

    def as_dict(self) -> dict[str, Any]:   # Metrics' keyword arguments (compile/worker.py)
        return {
            "ptx_regs": self.ptx_regs,
            "ptx_regs_by_type": dict(self.ptx_regs_by_type),
            "ptx_instrs": self.ptx_instrs,
            "ptx_opcodes": dict(self.ptx_opcodes),
            "ptx_local_bytes": self.ptx_local_bytes,
            "ptx_shared_bytes": self.ptx_shared_bytes,
        }


def entry_names(ptx: str) -> list[str]:
    """Kernel (`.entry`) names first, then `.func` names; each once (a .func may be declared twice)."""
    found = [(m.group(0).startswith(".func"), m.group(1)) for m in _ENTRY.finditer(_strip_comments(ptx))]
    return list(dict.fromkeys(name for _, name in sorted(found, key=lambda f: f[0])))


def _strip_comments(ptx: str) -> str:
    return _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", ptx))


def normalise(ptx: str) -> str:
    """PTX with debug info, comments, blank lines and the kernel's own name removed.

    Two kernels that differ only in name, source position or comments normalise equally.
    """
    text = _DEBUG_SECTION.sub("", ptx)
    text = _strip_comments(text)
    text = _DEBUG_LINE.sub("", text)
    for name in entry_names(ptx):
        # only where PTX names a function: `.entry NAME(`, `call NAME, (`, `NAME_param_0`; a kernel
        # called `add` or `max` must not turn `add.f32` into `KERNEL.f32`
        text = re.sub(rf"(?<![\w$.%]){re.escape(name)}(?=_param_\d|\s*[(,])", "KERNEL", text)
    lines = [line.strip() for line in text.splitlines()]
    lines = [re.sub(r"\s+", " ", line) for line in lines if line and not line.startswith("$L__tmp")
             and not line.startswith("$L__func_")]
    return "\n".join(lines) + "\n"


_LOC = re.compile(r"\.loc\s+(\d+)\s+(\d+)")
_FILE = re.compile(r'\.file\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(?:\s*,?\s*"((?:[^"\\]|\\.)*)")?')


@dataclass(frozen=True)
class SourceLines:
    """Where each line of `normalise(ptx)` came from, which normalising drops (`.loc`, `.file`):
    kept beside the normalised text for the HTML report's PTX view, never compared. Run-length
    coded, so it costs a few bytes per source line, not per PTX line: `runs` are (PTX lines,
    index into `files` or -1 for none, source line)."""

    files: tuple[str, ...]
    runs: tuple[tuple[int, int, int], ...]

    def as_json(self) -> dict[str, object]:
        return {"files": list(self.files), "runs": [list(r) for r in self.runs]}

    @classmethod
    def from_json(cls, value: object) -> SourceLines | None:
        """The stored form back; None for anything else (an older cache entry has none)."""
        if not isinstance(value, dict):
            return None
        files, runs = value.get("files"), value.get("runs")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files) or not isinstance(runs, list):
            return None
        out = []
        for run in runs:
            if not (isinstance(run, list) and len(run) == 3 and all(type(x) is int for x in run)
                    and run[0] > 0 and -1 <= run[1] < len(files)):
                return None
            out.append((run[0], run[1], run[2]))
        return cls(tuple(files), tuple(out))


def source_lines(ptx: str) -> SourceLines:
    """The `.loc` in force at each line `normalise` keeps (the same lines, in the same order),
    with file names as `.file` gives them (a directory and a name joined)."""
    text = _strip_comments(_DEBUG_SECTION.sub("", ptx))
    names: dict[int, str] = {}
    per_line: list[tuple[int, int]] = []
    here = (-1, 0)
    for raw in text.splitlines():
        line = raw.strip()
        if _DEBUG_LINE.match(line):
            if (m := _LOC.match(line)) is not None:
                here = (int(m.group(1)), int(m.group(2)))
            elif (m := _FILE.match(line)) is not None:
                # `.file 1 "dir/name"`, or `.file 1 "dir", "name"`
                folder, name = (None, m.group(2)) if m.group(3) is None else (m.group(2), m.group(3))
                names[int(m.group(1))] = f"{folder.rstrip('/')}/{name}" if folder and not name.startswith("/") else name
            continue
        if line and not line.startswith(("$L__tmp", "$L__func_")):
            per_line.append(here)
    order = list(dict.fromkeys(f for f, _ in per_line if f in names))
    index = {f: i for i, f in enumerate(order)}
    runs: list[list[int]] = []
    for f, number in per_line:
        key = [index.get(f, -1), number if f in index else 0]
        if runs and runs[-1][1:] == key:
            runs[-1][0] += 1
        else:
            runs.append([1, *key])
    return SourceLines(tuple(names[f] for f in order), tuple((a, b, c) for a, b, c in runs))


def _split_operands(text: str) -> tuple[str, ...]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    tail = "".join(current).strip()
    if tail:
        parts.append(tail)
    return tuple(re.sub(r"\s+", " ", p) for p in parts)


def statements(ptx: str) -> tuple[list[Instruction], dict[str, int]]:
    """Instructions in program order and the position (instruction index) of every label."""
    text = _DEBUG_LINE.sub("", _strip_comments(_DEBUG_SECTION.sub("", ptx)))
    # Only function bodies hold instructions: skip everything before the first entry's body.
    instructions: list[Instruction] = []
    labels: dict[str, int] = {}
    for chunk in text.split(";"):
        chunk = chunk.strip()
        while True:
            if chunk[:1] in ("{", "}"):
                chunk = chunk[1:].strip()
                continue
            m = _LABEL_PREFIX.match(chunk)
            if m:
                labels[m.group(1)] = len(instructions)
                chunk = chunk[m.end():].strip()
                continue
            break
        if not chunk or chunk.startswith("."):
            continue
        predicate = ""
        if chunk.startswith("@"):
            predicate, _, chunk = chunk.partition(" ")
            chunk = chunk.strip()
        opcode, _, rest = chunk.partition(" ") if " " in chunk else chunk.partition("\t")
        instructions.append(Instruction(predicate, opcode.strip(), _split_operands(rest)))
    return instructions, labels


def metrics(ptx: str) -> PtxMetrics:
    text = _strip_comments(ptx)
    by_type: Counter[str] = Counter()
    for typ, _name, count in _REG_DECL.findall(text):
        by_type[typ] += int(count) if count else 1
    local = shared = 0
    for space, typ, count in _STATE_DECL.findall(text):
        size = _TYPE_BYTES.get(typ, 1) * (int(count) if count else 0)
        if space == "local":
            local += size
        else:
            shared += size
    instructions, _ = statements(ptx)
    opcodes = Counter(i.opcode for i in instructions)
    return PtxMetrics(
        ptx_regs=sum(by_type.values()),
        ptx_regs_by_type=dict(sorted(by_type.items())),
        ptx_instrs=len(instructions),
        ptx_opcodes=dict(sorted(opcodes.items())),
        ptx_local_bytes=local,
        ptx_shared_bytes=shared,
    )


def _has_dest(opcode: str) -> bool:
    head = opcode.split(".", 1)[0]
    return head not in _NO_DEST


def value_numbers(ptx: str, mask_immediates: bool = False) -> list[str]:
    """One hash per instruction describing *what it computes*, independent of register names.

    Each register read is replaced by the hash of the instruction that last wrote it, so two
    kernels that compute the same values in the same order get equal sequences even when ptxas
    or LLVM numbered the registers differently. With `mask_immediates`, literal operands are
    ignored: equal masked sequences but unequal plain ones means only constants changed.
    """
    return _numbered(ptx, mask_immediates)[1]


def memory_order(ptx: str) -> list[tuple[str, str]]:
    """The kernel's side effects, synchronisation and control flow in program order, as
    (opcode, value number): stores, atomics, barriers, fences, async copies, branches and branch
    targets, with the memory loads between two of them. A load may read what an earlier store
    wrote (or what a barrier made visible), so moving it across one changes what it reads;
    two loads between the same two of them may swap freely, so each such run is sorted.
    Loads of parameters, constants and read-only (`.nc`) memory are values, not in the list."""
    instructions, numbers, labels = _numbered(ptx, False)
    at: dict[int, list[str]] = {}
    for rank, position in enumerate(sorted(labels.values())):
        at.setdefault(position, []).append(f"L{rank}")
    out: list[tuple[str, str]] = []
    run: list[tuple[str, str]] = []
    for index in range(len(instructions) + 1):
        kind = _order_kind(instructions[index].opcode) if index < len(instructions) else None
        if kind == "read":
            run.append((instructions[index].opcode, numbers[index]))
            continue
        if kind is None and index not in at and index < len(instructions):
            continue
        out += sorted(run, key=lambda item: item[1])
        run = []
        out += [("label", name) for name in at.get(index, ())]
        if kind == "ordered":
            out.append((instructions[index].opcode, numbers[index]))
    return out


def _order_kind(opcode: str) -> str | None:
    """"read" for a load from memory others may write, "ordered" for a side effect, barrier,
    fence or branch, None for a value computed from registers alone."""
    head, *mods = opcode.split(".")
    if head in _ORDERED:
        return "ordered"
    if head in _READS and not {"param", "const", "nc"} & set(mods):
        return "read"
    return None


def _numbered(ptx: str, mask_immediates: bool) -> tuple[list[Instruction], list[str], dict[str, int]]:
    """The instructions of normalised PTX, their value numbers (see value_numbers), the labels."""
    instructions, labels = statements(normalise(ptx))
    label_rank = {name: f"L{rank}" for rank, name in enumerate(sorted(labels, key=labels.__getitem__))}
    current: dict[str, str] = {}
    out: list[str] = []

    def canon(operand: str) -> str:
        def reg(m: re.Match[str]) -> str:
            return current.get(m.group(0), "in:" + re.sub(r"\d+$", "", m.group(0)))
        text = _REGISTER.sub(reg, operand)
        text = re.sub(r"[A-Za-z_$][\w$]*", lambda m: label_rank.get(m.group(0), m.group(0)), text)
        if mask_immediates:
            text = _IMMEDIATE.sub("#", text)
        return text

    for ins in instructions:
        dests: list[str] = []
        reads = list(ins.operands)
        if ins.operands and _has_dest(ins.opcode):
            first = ins.operands[0]
            dests = _REGISTER.findall(first) if not first.startswith("[") else []
            if dests:
                reads = reads[1:]
        head = ins.opcode.split(".", 1)[0]
        if head in _COMMUTATIVE and len(reads) >= 2:
            # `x + y` and `y + x` compute one value; LLVM picks operand order freely
            reads = [*sorted(reads[:2], key=canon), *reads[2:]]
        key = "|".join([canon(ins.predicate), ins.opcode, *map(canon, reads)])
        digest = hashlib.blake2s(key.encode(), digest_size=8).hexdigest()
        out.append(digest)
        for index, dest in enumerate(dests):
            current[dest] = f"{digest}.{index}"
    return instructions, out, labels
