"""The embedded corpus through the ordinary diff path, on sm_90: the study's claims and the controls."""

from __future__ import annotations

import ast

import pytest

from helpers import isolate
from ptxdiff.corpus import pairs as corpus

pytestmark = pytest.mark.module_env   # the module fixture isolates once; tests that need their own call isolate()

STUDY_STRUCTURAL = ["gelu", "matmul", "flash_attention", "attention", "l2norm", "rmsnorm", "silu"]
STUDY_SEMANTIC = ["leaky_relu", "softmax"]


def test_every_pair_is_complete_and_differs():
    pairs = corpus.load_pairs()
    assert len(pairs) >= 39 and len({p.name for p in pairs}) == len(pairs)
    assert {p.name for p in pairs if p.study} == set(STUDY_STRUCTURAL + STUDY_SEMANTIC)
    assert sum(p.hand_label == "constant-only" for p in pairs) >= 8
    assert sum(p.hand_label == "refactor" for p in pairs) >= 6
    root = corpus.corpus_dir()
    for p in pairs:
        old, new = p.source(root, "old"), p.source(root, "new")
        assert old != new, p.name
        names = {n.name for n in ast.parse(old).body if isinstance(n, ast.FunctionDef)}
        assert {p.kernel, "launch", "make_inputs"} <= names, p.name


@pytest.fixture(scope="module")
def study_and_controls(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    isolate(tmp_path_factory.mktemp("corpus"), mp)
    controls = [p.name for p in corpus.load_pairs() if p.hand_label == "refactor"]
    pairs, report = corpus.run([90], jobs=2, names=STUDY_STRUCTURAL + STUDY_SEMANTIC + controls,
                               workdir=str(tmp_path_factory.mktemp("repo")))
    yield pairs, report, controls
    mp.undo()


def _verdict(report, name):
    rows = [r for r in report.rows if r.kernel.startswith(f"kernels/{name}.py::")]
    assert len(rows) == 1, (name, rows)
    return rows[0].verdict


@pytest.mark.integration
def test_study_structural_pairs_are_structural(study_and_controls):
    _, report, _ = study_and_controls
    assert {n: _verdict(report, n) for n in STUDY_STRUCTURAL} == dict.fromkeys(STUDY_STRUCTURAL, "structural")


@pytest.mark.integration
def test_study_semantic_pairs_are_constants_only(study_and_controls):
    _, report, _ = study_and_controls
    assert {n: _verdict(report, n) for n in STUDY_SEMANTIC} == dict.fromkeys(STUDY_SEMANTIC, "constants-only")


@pytest.mark.integration
def test_every_control_is_identical_or_reordered(study_and_controls):
    _, report, controls = study_and_controls
    assert len(controls) >= 6
    for name in controls:
        assert _verdict(report, name) in ("identical", "reordered"), name


@pytest.mark.integration
def test_evidence_counts_add_up_and_render(study_and_controls):
    pairs, report, _ = study_and_controls
    ev = corpus.collect(pairs, report)
    assert sum(sum(row[1:]) for row in ev.matrix()) == len(pairs)
    assert ev.tp == len(STUDY_STRUCTURAL) and ev.fp == 0
    text = corpus.evidence(ev, "github")
    assert "Confusion matrix on sm_90" in text and "precision" in text
    block = corpus.headline(ev)
    assert block.startswith(corpus.README_BEGIN) and block.endswith(corpus.README_END)


def test_readme_carries_the_generated_evidence_block():
    text = (corpus.corpus_dir().parent / "docs" / "evidence.md").read_text()
    begin, end = text.index(corpus.README_BEGIN), text.index(corpus.README_END)
    assert "precision" in text[begin:end] and "pairs, compiled for" in text[begin:end]


@pytest.mark.integration
def test_outputs_catch_every_observable_constant_change_and_pass_every_control(tmp_path, monkeypatch):
    """The study's blind spot: constant-only changes give zero count delta; running old and new
    on the same inputs sees each one whose effect is observable, and no control differs."""
    isolate(tmp_path, monkeypatch)
    chosen = [p for p in corpus.load_pairs() if p.hand_label in ("constant-only", "refactor")]
    pairs, report = corpus.run([90], jobs=2, names=[p.name for p in chosen], workdir=str(tmp_path / "repo"),
                               outputs=True)
    results = {r.kernel.split("/")[1].split(".py")[0]: (r.outputs or {}).get("result") for r in report.rows}
    for p in chosen:
        if p.hand_label == "constant-only" and p.observable:
            assert results[p.name] == "outputs-differ", p.name
        elif p.hand_label == "refactor":
            assert results[p.name] in ("outputs-equal", None), p.name  # None: effective source unchanged


# a subset, to stay cheap: a guessed kernel, a tiled matmul, autotuned configs (stages, warps, blocks),
# a reduction and a control; every row of theirs is compared
AT_ANY_JOBS = ["gelu", "matmul", "perf_stages_autotune_matmul", "perf_warps_autotune", "perf_block_autotune",
               "softmax", "control_reorder_loads"]


@pytest.mark.integration
def test_every_row_is_the_same_at_jobs_1_and_jobs_2(tmp_path, monkeypatch):
    """The same revisions give the same rows at any --jobs: verdicts, metrics, deltas and errors
    (where the results came from aside), each run with its own fresh cache."""
    runs = []
    for jobs in (1, 2):
        (tmp_path / f"j{jobs}").mkdir()
        isolate(tmp_path / f"j{jobs}", monkeypatch)
        _, report = corpus.run([90], jobs=jobs, names=AT_ANY_JOBS, workdir=str(tmp_path / f"repo{jobs}"))
        runs.append([{k: v for k, v in row.as_json().items() if k != "cache"} for row in report.rows])
    assert len(runs[0]) >= len(AT_ANY_JOBS)
    assert [(r["kernel"], r["spec"], r["verdict"]) for r in runs[0]] == [(r["kernel"], r["spec"], r["verdict"])
                                                                        for r in runs[1]]
    assert runs[0] == runs[1]
