"""`ptxdiff corpus`: the evidence table, from the embedded corpus, through the ordinary diff path.

Every pair's old.py goes into one commit and new.py into the next of a throwaway repository;
`Engine.compare` then does exactly what `ptxdiff diff` does. Labels come from labels.py (a
source-level rule), never from PTX; the gate is measured against them.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptxdiff import PACKAGE_DIR, user_settings
from ptxdiff.compare.results import describe
from ptxdiff.corpus.evidence import README_BEGIN, README_END, Evidence, headline, table_row
from ptxdiff.corpus.evidence import evidence as evidence  # `corpus.evidence(ev)`: the report's text, re-exported
from ptxdiff.corpus.labels import Label
from ptxdiff.corpus.labels import label as source_label
from ptxdiff.errors import UsageError
from ptxdiff.targets import target_name
from ptxdiff.verdict import Verdict

if TYPE_CHECKING:  # types only: the engine is imported where it runs
    from ptxdiff.compare.results import Report, Row
    from ptxdiff.compile.toolchains import Policy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

COUNTS = ("ptx_regs", "ptx_instrs", "regs")  # the counts a static gate reads


def corpus_dir() -> Path:
    """PTXDIFF_CORPUS, else the corpus beside the package."""
    given = user_settings.load(config=user_settings.no_config).corpus
    return Path(given) if given else Path(PACKAGE_DIR).parent / "corpus"


@dataclass(frozen=True)
class Pair:
    name: str
    kernel: str
    description: str
    hand_label: str
    bug_class: str
    config: dict[str, object]   # the pair's [tool.ptxdiff.kernels] keys, as pairs.toml gives them
    study: bool
    observable: bool

    def source(self, root: Path, side: str) -> str:
        return (root / "pairs" / self.name / f"{side}.py").read_text()

    @property
    def kernel_id(self) -> str:
        return f"kernels/{self.name}.py::{self.kernel}"


def load_pairs(root: Path | None = None, names: list[str] | None = None) -> list[Pair]:
    root = root or corpus_dir()
    data = tomllib.loads((root / "pairs.toml").read_text())
    pairs = [Pair(p["name"], p["kernel"], p.get("description", ""), p.get("hand_label", ""),
                  p.get("bug_class", ""), p.get("config", {}), bool(p.get("study")), p.get("observable", True))
             for p in data["pair"]]
    if names:
        pairs = [p for p in pairs if p.name in names]
    return pairs


def _toml_value(v: object) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v)


def build_repo(pairs: list[Pair], where: Path, targets: list[int], root: Path | None = None,
               kernel_keys: dict[str, object] | None = None) -> tuple[str, str]:
    """A repo with all old sides in one commit and all new sides in the next; returns both ids.
    `kernel_keys` are added to every kernel's config table (e.g. time_size)."""
    from ptxdiff.git.repo import commit_tree

    root = root or corpus_dir()
    config = ["[tool.ptxdiff]", "targets = [" + ", ".join(f'"{target_name(t)}"' for t in targets) + "]", ""]
    for p in pairs:  # every pair ships its host wrapper and input generator: the --outputs mechanism
        config.append(f'[tool.ptxdiff.kernels."{p.kernel_id}"]')
        config.append(f'wrapper = "kernels/{p.name}.py:launch"')
        config.append(f'inputs = "kernels/{p.name}.py:make_inputs"')
        config += [f"{k} = {_toml_value(v)}" for k, v in {**p.config, **(kernel_keys or {})}.items()]
        config.append("")
    common = {"pyproject.toml": "\n".join(config).encode(), "kernels/__init__.py": b""}
    old = {**common, **{f"kernels/{p.name}.py": p.source(root, "old").encode() for p in pairs}}
    new = {**common, **{f"kernels/{p.name}.py": p.source(root, "new").encode() for p in pairs}}
    first = commit_tree(str(where), old, "corpus: correct kernels", None)
    second = commit_tree(str(where), new, "corpus: changed kernels", first)
    return first, second


def run(targets: list[int], jobs: int | None = None, names: list[str] | None = None,
        progress: Callable[[str], None] | None = None, workdir: str | None = None, outputs: bool = False,
        imports: bool = False, tritons: Policy | None = None,
        unsandboxed: str | None = None) -> tuple[list[Pair], Report]:
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo
    from ptxdiff.git.values import Side
    from ptxdiff.permissions import Permissions

    pairs = load_pairs(names=names)
    tmp = workdir or tempfile.mkdtemp(prefix="ptxdiff-corpus-")
    first, second = build_repo(pairs, Path(tmp), targets)
    repo = Repo(tmp)
    permissions = Permissions(imports=imports, unsandboxed=unsandboxed)
    engine = Engine(repo, jobs=jobs, targets=targets, progress=progress, permissions=permissions,
                    tritons=tritons)   # toolchains.Policy: --triton VERSION, else the installed triton
    report = engine.compare(Side("correct", first), Side("changed", second), show_all=True,
                            outputs=outputs or None)
    return pairs, report


def collect(pairs: list[Pair], report: Report) -> Evidence:
    root = corpus_dir()
    rows_by_kernel: dict[str, list[Row]] = {}
    for r in report.rows:
        rows_by_kernel.setdefault(r.kernel, []).append(r)
    labels = {p.name: source_label(p.source(root, "old"), p.source(root, "new"), p.kernel) for p in pairs}
    targets = tuple(sorted({r.target for r in report.rows}, key=lambda t: int(t[3:])))
    primary = "sm_90" if "sm_90" in targets else (targets[0] if targets else "sm_90")
    table: list[list[str]] = []
    confusion: Counter[tuple[str, str]] = Counter()
    counter: list[str] = []
    portable: dict[str, bool] = {}
    outputs: dict[str, str] = {}
    block = tuple(report.config.block)
    tp = fp = fn = 0
    for p in pairs:
        rows = rows_by_kernel.get(p.kernel_id, [])
        lab = labels[p.name]
        for r in rows:
            table.append(table_row(p.name, lab, p.hand_label, r))
            if r.outputs and r.target == primary:
                outputs[p.name] = r.outputs["result"]
        for r in (r for r in rows if r.target == primary):
            confusion[(r.verdict, lab)] += 1
            flagged = r.verdict in block
            tp += flagged and lab == Label.STRUCTURAL
            fp += flagged and lab != Label.STRUCTURAL
            fn += (not flagged) and lab == Label.STRUCTURAL
            zero = all(not r.delta.get(k) for k in COUNTS)
            if lab == Label.STRUCTURAL and zero:
                counter.append(f"{p.name}: structural by source, zero count delta on {r.target} "
                               f"(verdict {r.verdict}) - {p.description}")
            if lab == Label.CONSTANT_ONLY and not zero and r.verdict != Verdict.FAILED:
                counter.append(f"{p.name}: constant-only by source, count delta on {r.target} "
                               f"({', '.join(f'{k} {r.delta[k]:+}' for k in COUNTS if r.delta.get(k))}) "
                               f"- {p.description}")
        per_target: dict[str, list[tuple[object, ...]]] = {}
        for r in rows:
            per_target.setdefault(r.target, []).append(tuple(r.delta.get(k) for k in ("ptx_regs", "ptx_instrs")))
        portable[p.name] = len({tuple(v) for v in per_target.values()}) <= 1
    tools = describe(report.toolchain)
    by_label: dict[str, Counter[str]] = {}
    for p in pairs:
        if p.name in outputs:
            by_label.setdefault(labels[p.name], Counter())[outputs[p.name]] += 1
    return Evidence(len(pairs), targets, primary, tools, table, dict(confusion), tp, fp, fn, block, counter, portable,
                    by_label)


def update_readme(path: Path, ev: Evidence) -> None:
    text = path.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise UsageError(f"{path} has no corpus evidence markers ({README_BEGIN} ... {README_END})")
    head, _, rest = text.partition(README_BEGIN)
    _, _, tail = rest.partition(README_END)
    path.write_text(head + headline(ev) + tail)
