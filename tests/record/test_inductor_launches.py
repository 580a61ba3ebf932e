"""`ptxdiff record` sees the launches torch.compile's generated code makes (issue 41). Inductor
copies a user kernel's source into its own code and launches that copy through
`CachingAutotuner.run`, never `JITFunction.run`, with Python floats typed fp64 (checked on an
H100, torch 2.11 + triton 3.6: the eager launch recorded `scale: fp32`, the two compiled launches
nothing until this patch, then `scale: fp64`, via torch.compile). Here the autotuner is a stand-in
of the same shape, so the test needs neither torch nor a GPU."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import ModuleType, SimpleNamespace

from ptxdiff.record import launch_hook


def _module(tmp_path, name: str, text: str) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_launch_of_torch_compiles_copy_is_recorded_under_the_repository_kernel(tmp_path, monkeypatch):
    root, out = tmp_path / "repo", tmp_path / "out"
    root.mkdir()
    out.mkdir()
    # the repository's kernel, as its module holds it (a jit object wrapping the function)
    user = _module(root, "ops_kern", "def k(X, Out, n, scale, BLOCK):\n    pass\n\n"
                                     "class Jit:\n    def __init__(self, fn):\n        self.fn = fn\n\nk = Jit(k)\n")
    monkeypatch.setitem(sys.modules, "ops_kern", user)
    # Inductor's copy: the same function name in a generated module outside the repository
    generated = _module(tmp_path, "generated_kern", "def k(X, Out, n, scale, BLOCK):\n    pass\n")
    copy = SimpleNamespace(fn=generated.k, arg_names=["X", "Out", "n", "scale", "BLOCK"])

    class CachingAutotuner:   # the stand-in: what run() reads of the real one
        def __init__(self) -> None:
            self.fn = copy
            self.triton_meta = {"signature": {"X": "*bf16", "Out": "*bf16", "n": "i32", "scale": "fp64",
                                              "BLOCK": "constexpr"},
                                "constants": {"BLOCK": 1024},
                                "configs": [{(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}]}
            self.launchers = [SimpleNamespace(config=SimpleNamespace(kwargs={}, num_warps=8, num_stages=2))]
            self.ran = 0

        def run(self, *args, stream, benchmark_run=False, **kwargs):
            self.ran += 1
            return "done"

    heuristics = ModuleType("triton_heuristics")
    heuristics.CachingAutotuner = CachingAutotuner   # type: ignore[attr-defined]
    recorder = launch_hook.Recorder(str(out), str(root))
    monkeypatch.setattr(launch_hook, "_recorder", recorder)
    launch_hook.patch_inductor(heuristics)

    tuner = CachingAutotuner()
    assert tuner.run(0, 1, 1 << 20, 0.5, 1024, 1, 1, stream=0) == "done"
    tuner.run(0, 1, 1 << 20, 0.25, 1024, 1, 1, stream=0)
    tuner.run(0, 1, 1 << 20, 0.25, 1024, 1, 1, stream=0, benchmark_run=True)   # autotuning: no launch
    recorder.flush()
    lines = [json.loads(line) for f in out.iterdir() for line in f.read_text().splitlines()]
    assert tuner.ran == 3 and sum(line["count"] for line in lines) == 2
    launch = lines[0]["launch"]
    assert launch["kernel"] == "ops_kern.py::k" and launch["via"] == "torch.compile"
    assert launch["signature"] == {"X": "*bf16", "Out": "*bf16", "n": "i32", "scale": "fp64"}
    assert launch["constexprs"] == {"BLOCK": 1024} and launch["divisible_by_16"] == ["X", "Out"]
    assert (launch["num_warps"], launch["num_stages"]) == (8, 2)
    from ptxdiff.record.launches import parse
    (parsed,) = parse(json.dumps({**launch, "count": 2}), "launches.jsonl:1")["ops_kern.py::k"]
    assert parsed.signature["scale"] == "fp64"


def test_a_launch_of_inductors_own_kernel_is_not_recorded(tmp_path, monkeypatch):
    root, out = tmp_path / "repo", tmp_path / "out"
    root.mkdir()
    out.mkdir()
    generated = _module(tmp_path, "generated_poi", "def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK):\n"
                                                   "    pass\n")

    class CachingAutotuner:
        def __init__(self) -> None:
            self.fn = SimpleNamespace(fn=generated.triton_poi_fused_add_0, arg_names=["in_ptr0"])
            self.triton_meta = {"signature": {"in_ptr0": "*fp32"}}
            self.launchers: list = []

        def run(self, *args, stream, **kwargs):
            return None

    heuristics = ModuleType("triton_heuristics")
    heuristics.CachingAutotuner = CachingAutotuner   # type: ignore[attr-defined]
    recorder = launch_hook.Recorder(str(out), str(root))
    monkeypatch.setattr(launch_hook, "_recorder", recorder)
    launch_hook.patch_inductor(heuristics)
    CachingAutotuner().run(stream=0)
    recorder.flush()
    assert not list(out.iterdir())
