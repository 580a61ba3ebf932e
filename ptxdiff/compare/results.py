"""What a comparison produces: one row per kernel x spec x target, and the report around them.

Its own module so that renderers (report/), history and the gate read results without importing
the engine that makes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ptxdiff import repo_config
from ptxdiff.compare.notes import Note, texts
from ptxdiff.git.values import Side
from ptxdiff.metrics.counts import Metrics
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.specs.detail import SpecDetail
from ptxdiff.strenum import StrEnum
from ptxdiff.verdict import Verdict


class Provenance(StrEnum):
    """Where a row's results came from (its `cache`), in the order a row says it: compiled where
    either side was, else remote, else local."""

    COMPILED = "compiled"
    REMOTE = "remote"
    LOCAL = "local"


@dataclass(frozen=True)
class Row:
    kernel: str
    spec: str
    target: str
    verdict: Verdict
    blocking: bool
    old: Metrics | None
    new: Metrics | None
    delta: dict[str, int | float]       # new minus old of each count (verdict.delta)
    error: str | None = None
    spec_detail: SpecDetail | None = None
    old_kernel: str | None = None       # the id on the old side when it differs (rename)
    log: str | None = None
    old_ptx: str | None = None
    new_ptx: str | None = None
    outputs: dict[str, Any] | None = None         # --outputs: the same inputs through old and new (per kernel)
    timing: dict[str, Any] | None = None          # --time: new/old on a GPU with CI and A/A band (per kernel)
    spec_source: str | None = None      # where the spec's values came from: config, recorded, call-site, guessed
    paths: tuple[str, ...] = ()         # the files the kernel's effective source reads (either side)
    transient: bool = False             # failed for a reason that may not repeat (timeout, crash): not cached
    why: str | None = None              # why the verdict: the opcode delta, or the first differing PTX lines
    launch: str | None = None           # what changed in the launch: "BLOCK_SIZE 1024 -> 2048 (call site f.py:21)"
    cache: Provenance | None = None     # where its results came from: the local or remote cache, or compiled
    toolchain: str | None = None        # where the sides compiled with different tritons: "triton 3.6.0 -> 3.9.0"
    old_loc: SourceLines | None = None  # the source line of each line of old_ptx / new_ptx (the HTML view)
    new_loc: SourceLines | None = None
    old_cubin: str | None = None        # each side's cubin, packed (compile/disassemble.py), where kept
    new_cubin: str | None = None
    old_sass: str | None = None         # its normalised SASS, read when an HTML page is rendered (listings.py)
    new_sass: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "spec": self.spec, "spec_source": self.spec_source, "target": self.target,
                "verdict": self.verdict, "blocking": self.blocking, "old": _public(self.old), "new": _public(self.new),
                "paths": list(self.paths), "transient": self.transient,
                "delta": self.delta, "error": self.error,
                "spec_detail": self.spec_detail.as_json() if self.spec_detail is not None else None,
                "renamed_from": self.old_kernel, "outputs": self.outputs, "timing": self.timing,
                "why": self.why, "launch": self.launch, "cache": self.cache, "toolchain": self.toolchain,
                "log": self.log}


def _public(metrics: Metrics | None) -> dict[str, Any] | None:
    return metrics.as_json() if metrics is not None else None


def describe(tools: dict[str, Any]) -> str:
    """A report's toolchain for people: `ptxdiff 0.1.0, triton 3.6.0 -> 3.9.0, python 3.11.7`
    (`triton_old`, the old side's triton, shows only where it differs)."""
    old, new = tools.get("triton_old"), tools.get("triton")
    shown = {k: v for k, v in tools.items() if k != "triton_old"}
    if old and old != new:
        shown["triton"] = f"{old} -> {new}"
    return ", ".join(f"{k} {v}" for k, v in shown.items())


@dataclass(frozen=True)
class Report:
    base: Side | None
    head: Side
    toolchain: dict[str, Any]
    rows: list[Row]
    config: repo_config.Config
    compiled: int = 0                # specs compiled in this run (the rest came from the cache)
    messages: list[Note] = field(default_factory=list)   # what the comparison says under the table

    @property
    def blocking(self) -> list[Row]:
        return [r for r in self.rows if r.blocking]

    def as_json(self) -> dict[str, Any]:
        return {"base": self.base.commit if self.base else None, "head": self.head.commit,
                "toolchain": self.toolchain, "kernels": [r.as_json() for r in self.rows],
                "messages": texts(self.messages)}
