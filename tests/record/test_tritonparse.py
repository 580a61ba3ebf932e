"""`ptxdiff record --from-tritonparse DIR` on a checked-in trace in tritonparse's raw format
(tests/data/tritonparse: compilation and launch events, an autotuner's benchmark and final
launches, a kernel traced without launch events, an Inductor kernel outside the repository)."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest

from helpers import DATA, make_repo, ptxdiff
from ptxdiff.errors import ConfigError, UsageError
from ptxdiff.record import launches as recorded
from ptxdiff.record import tritonparse as tritonparse_logs

TRACES = DATA / "tritonparse"
EXPECTED = """\
{"kernel": "ops/norm.py::norm_kernel", "params": ["x_ptr", "w_ptr", "n", "eps", "X_DTYPE", "BLOCK"], \
"signature": {"x_ptr": "*bf16", "w_ptr": "*fp32", "n": "i32", "eps": "fp32"}, \
"constexprs": {"X_DTYPE": "tl.bfloat16", "BLOCK": 1024}, "divisible_by_16": ["x_ptr", "w_ptr"], "num_warps": 4, \
"num_stages": 3, "options": {"maxnreg": 128}, "autotune": null, "via": "tritonparse", "count": 1}
{"kernel": "ops/scale.py::scale_kernel", "params": ["x_ptr", "out_ptr", "bias_ptr", "n", "seed", "alpha", "flag", \
"BLOCK", "HAS_BIAS"], "signature": {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32", "seed": "i32", \
"alpha": "fp32", "flag": "u1"}, "constexprs": {"bias_ptr": null, "BLOCK": 64, "HAS_BIAS": false}, \
"divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 4, "num_stages": 3, "options": {}, "autotune": null, \
"via": "tritonparse", "count": 2, "replay": [{"grid": [4, 1, 1], "args": {"x_ptr": {"dtype": "float16", \
"shape": [256], "stride": [1], "offset": 0, "buffer": 0}, "out_ptr": {"dtype": "float16", "shape": [256], \
"stride": [1], "offset": 0, "buffer": 1}, "n": 256, "seed": 32, "alpha": 2.0, "flag": true}, "buffers": [512, 512], \
"count": 2}]}
{"kernel": "ops/scale.py::tuned_kernel", "params": ["x_ptr", "out_ptr", "n", "BLOCK", "EVEN"], \
"signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": 64, "EVEN": false}, \
"divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 2, "num_stages": 3, "options": {}, "autotune": "ran", \
"via": "tritonparse", "count": 3, "replay": [{"grid": [2, 1, 1], "args": {"x_ptr": {"dtype": "float32", \
"shape": [96], "stride": [1], "offset": 0, "buffer": 0}, "out_ptr": {"dtype": "float32", "shape": [96], \
"stride": [1], "offset": 0, "buffer": 1}, "n": 96}, "buffers": [384, 384], "count": 3}]}
"""


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path, {"ops/scale.py": "import triton\n", "ops/norm.py": "import triton\n"})


@pytest.mark.integration
def test_the_sample_trace_becomes_the_file(repo, tmp_path):
    proc = ptxdiff(["record", "--from-tritonparse", str(TRACES)], repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / recorded.DEFAULT_PATH).read_text() == EXPECTED
    assert proc.stdout.splitlines() == [
        "recorded 6 launches of 3 kernels (3 distinct specs, tritonparse) into .ptxdiff/launches.jsonl",
        "ignored 1 launch of 1 kernel outside the repository or ignored by git "
        "(/tmp/torchinductor_ci/qx/cqxabc.py::triton_poi_fused_add_0)",
        # the default file counts once it is committed: the compared revisions are read, not the work tree
        "commit .ptxdiff/launches.jsonl: ptxdiff diff, git diff and the pre-push gate read it from the revisions "
        "they compare",
    ]


@pytest.mark.integration
def test_gzip_members_read_like_plain_text(repo, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    lines = (TRACES / "dedicated_log_triton_trace_ci_.ndjson").read_bytes().splitlines(keepends=True)
    (folder / "dedicated_log_triton_trace_rank_none_pid_1_.bin.ndjson").write_bytes(
        b"".join(gzip.compress(line) for line in lines))
    (folder / "parsed_output.ndjson.gz").write_bytes(b"not read")   # tritonparse's parsed output: skipped
    proc = ptxdiff(["record", "--from-tritonparse", str(folder), "-o", "x.jsonl"], repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "x.jsonl").read_text() == EXPECTED


@pytest.mark.integration
def test_a_bad_line_names_file_and_line(repo, tmp_path):
    folder = tmp_path / "traces"
    shutil.copytree(TRACES, folder)
    with open(folder / "dedicated_log_triton_trace_ci_.ndjson", "a") as f:
        f.write("{truncated\n")
    with pytest.raises(ConfigError, match=r"^dedicated_log_triton_trace_ci_\.ndjson:15: not JSON"):
        tritonparse_logs.read(folder, {"ops/scale.py"})
    with pytest.raises(UsageError, match="no tritonparse trace logs"):
        tritonparse_logs.events(repo)
    with pytest.raises(UsageError, match="not a folder of tritonparse traces"):
        tritonparse_logs.events(tmp_path / "missing")


def test_trace_paths_map_onto_the_repository_by_their_longest_suffix():
    files = {"ops/scale.py", "scale.py", "src/pkg/ops/scale.py"}
    assert tritonparse_logs.repo_path("/home/ci/work/ops/scale.py", files) == "ops/scale.py"
    assert tritonparse_logs.repo_path("/x/src/pkg/ops/scale.py", files) == "src/pkg/ops/scale.py"
    assert tritonparse_logs.repo_path("/x/site-packages/pkg/ops/scale.py", {"src/pkg/ops/scale.py"}) is None
    assert tritonparse_logs.repo_path("/x/notscale.py", {"scale.py"}) is None
    assert tritonparse_logs.repo_path("", files) is None


def test_a_launch_event_gives_a_replayable_launch_views_and_ranges_kept():
    event = {"grid": [8], "extracted_args": {
        "x": {"type": "tensor", "shape": [4, 8], "stride": [16, 1], "dtype": "torch.float32", "element_size": 4,
              "storage_offset": 8, "data_ptr": hex(0x1000 + 8 * 4), "min": -3.0, "max": 5.0},
        "y": {"type": "tensor", "shape": [64], "stride": [1], "dtype": "torch.float32", "element_size": 4,
              "storage_offset": 0, "data_ptr": "0x1000"},
        "n": {"type": "int", "value": 32}, "d": {"type": "TensorDescriptor"}}}
    got = tritonparse_logs.replay_of(event, ["x", "y", "n", "d"])
    assert got == {"grid": [8, 1, 1], "buffers": [256], "args": {
        "x": {"dtype": "float32", "shape": [4, 8], "stride": [16, 1], "offset": 8, "buffer": 0, "range": [-3.0, 5.0]},
        "y": {"dtype": "float32", "shape": [64], "stride": [1], "offset": 0, "buffer": 0},
        "n": 32, "d": {"unrecorded": "TensorDescriptor"}}}
    assert tritonparse_logs.replay_of({"extracted_args": {}}, []) is None


def test_ttir_signature_types():
    ttir = ('module {\n  tt.func public @k(%arg0: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("/a.py":3:0), '
            '%arg1: !tt.ptr<i8, 1> loc("/a,b.py":3:0), %arg2: i64 loc(#loc), %arg3: f32, %arg4: i1, '
            '%arg5: !tt.tensordesc<tensor<64x32xbf16, #shared>>, %arg6: !tt.ptr<f8E4M3FN>, %arg7: vector<2xf32>) {\n')
    assert tritonparse_logs.ttir_types(ttir, "k") == ["*fp16", "*i8", "i64", "fp32", "u1", "tensordesc<bf16[64, 32]>",
                                                      "*fp8e4nv", None]
    assert tritonparse_logs.ttir_types(ttir, "other") is None


def test_launch_arguments_are_typed_by_tritons_rules():
    t = tritonparse_logs.arg_type
    assert t({"type": "tensor", "dtype": "torch.uint8"}) == "*u8"
    assert t({"type": "int", "value": 2**31 - 1}) == "i32" and t({"type": "int", "value": 2**31}) == "i64"
    assert t({"type": "int", "value": 2**63}) == "u64" and t({"type": "int", "value": -2**31 - 1}) == "i64"
    assert t({"type": "float", "value": 1.0}) == "fp32" and t({"type": "bool", "value": False}) == "u1"
    assert t({"type": "TensorDescriptor", "base": {"dtype": "torch.float16"}, "block_shape": [64, 64]}) \
        == "tensordesc<fp16[64, 64]>"
    assert t({"type": "tensor", "dtype": "torch.complex64"}) is None


@pytest.mark.integration
def test_kernels_the_trace_cannot_type_are_said_and_left_out(repo, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    events = [json.loads(x) for x in (TRACES / "dedicated_log_triton_trace_ci_.ndjson").read_text().splitlines()]
    norm = next(e for e in events if e.get("payload", {}).get("metadata", {}).get("name") == "norm_kernel")
    norm["payload"]["file_content"] = {}
    (folder / "t.ndjson").write_text(json.dumps(norm) + "\n")
    got = tritonparse_logs.read(folder, {"ops/norm.py"})
    assert got.launches == ()
    assert got.notes == ("t.ndjson:1: the trace does not give the argument types of ops/norm.py::norm_kernel "
                         "(trace launches too: TRITON_TRACE_LAUNCH=1); left out",)
