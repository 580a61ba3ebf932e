"""`ptxdiff record --from-tritonparse DIR`: the launches in tritonparse's raw trace logs.

tritonparse (github.com/meta-pytorch/tritonparse) writes one NDJSON file per process into its
trace folder (`tritonparse.structured_logging.init(DIR)`, or TRITON_TRACE=DIR): `*.ndjson`, or
`*.bin.ndjson` made of gzip members or zstd frames (TRITON_TRACE_COMPRESSION). Two events count:
- "compilation": `payload.metadata` holds the kernel's `name`, `hash`, `num_warps` (and
  `num_warps_base` when warp specialisation changed it), `num_stages`, the launch options, and
  triton's `src_constants` {"(4,)": 1024} and `src_attrs` {"(0,)": [["tt.divisibility", 16]]};
  `payload.python_source` holds the kernel's file and code, `payload.file_content` its TTIR.
- "launch" (launch tracing on: TRITON_TRACE_LAUNCH=1 or init(enable_trace_launch=True)):
  `compilation_metadata.hash` names its compilation, `extracted_args` each argument (a tensor's
  dtype, a scalar's value); a launch under the autotuner's `_bench` is a benchmark run and is
  not counted, one under its `run` is the Config it picked (`autotune: "ran"`).
A kernel with launch events is recorded from them (counted per launch); a kernel with only
compilation events from those (counted per compilation; under an autotuner, `autotune: "all"`).
Parameter names come from parsing the traced source (never running it); argument types from a
launch's arguments by triton's rules, else from the TTIR signature, where signed and unsigned
integers are one type (a uint8 pointer reads as `*i8`). A trace's absolute file paths are mapped
onto the repository by the longest repository path they end with.
"""

from __future__ import annotations

import ast
import dataclasses
import gzip
import io
import json
import re
import textwrap
from collections import Counter
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ptxdiff.errors import ConfigError, UsageError
from ptxdiff.record import launches as recorded
from ptxdiff.record import replay_format
from ptxdiff.record.launch_hook import (
    DEFAULT_NUM_STAGES,
    DEFAULT_NUM_WARPS,
    OPTION_DEFAULTS,
    tl_name,
)

TORCH_TYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
               "uint64": "u64", "bool": "u1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
               "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16"}
MLIR_TYPES = {"f16": "fp16", "bf16": "bf16", "f32": "fp32", "f64": "fp64", "i1": "u1", "i8": "i8", "i16": "i16",
              "i32": "i32", "i64": "i64", "f8E4M3FN": "fp8e4nv", "f8E5M2": "fp8e5", "f8E4M3FNUZ": "fp8e4b8",
              "f8E5M2FNUZ": "fp8e5b16", "f8E4M3B11FNUZ": "fp8e4b15"}
_DTYPE_TEXT = re.compile(r"^triton\.language\.core\.dtype\('([^']+)'\)$")
_AUTOTUNER = "triton/runtime/autotuner.py"


def _lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    elif data[:4] == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard
        except ImportError:
            raise UsageError(f"{path}: zstd-compressed; install zstandard to read it "
                             "(or trace with TRITON_TRACE_COMPRESSION=gzip)") from None
        data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a tritonparse trace (not UTF-8 text)") from None


def events(folder: Path) -> list[tuple[dict[str, Any], str]]:
    """Every event of every raw log under `folder`, with `file:line`. Parsed outputs
    (`*.ndjson.gz`, which repeat the raw events) are not read."""
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder of tritonparse traces")
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
                   and (p.name.endswith(".ndjson") or p.name.endswith(".bin.ndjson")))
    if not files:
        raise UsageError(f"{folder}: no tritonparse trace logs (*.ndjson, *.bin.ndjson) in it")
    out = []
    for path in files:
        where = path.relative_to(folder).as_posix()
        for n, line in enumerate(_lines(path), 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{where}:{n}: not JSON ({e.msg} at column {e.colno})") from None
            except RecursionError:
                raise ConfigError(f"{where}:{n}: nested too deeply for a trace event") from None
            if isinstance(event, dict):
                out.append((event, f"{where}:{n}"))
    return out


def repo_path(file_path: str, repo_files: Collection[str]) -> str | None:
    """The repository file a trace's absolute path is a copy of: the longest repository path
    that the trace path ends with (the trace may come from another machine or checkout)."""
    if not file_path:
        return None
    trace = "/" + file_path.replace("\\", "/").lstrip("/")
    best = None
    for f in repo_files:
        if trace.endswith("/" + f) and (best is None or len(f) > len(best)):
            best = f
    return best


def params_of(code: str, name: str) -> list[str] | None:
    """The parameter names of function `name` in the traced source (parsed, not run)."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            a = node.args
            return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    return None


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets and quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "(<[{":
            depth += 1
        elif not quoted and ch in ")>]}":
            depth -= 1
        elif not quoted and depth == 0 and ch == sep:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _mlir_type(text: str) -> str | None:
    if text in MLIR_TYPES:
        return MLIR_TYPES[text]
    m = re.fullmatch(r"!tt\.ptr<([^,>]+)(?:,\s*\d+)?>", text)
    if m:
        inner = MLIR_TYPES.get(m.group(1).strip())
        return "*" + inner if inner else None
    m = re.match(r"!tt\.tensordesc<tensor<((?:\d+x)+)(\w+)", text)
    if m and m.group(2) in MLIR_TYPES:
        dims = m.group(1).rstrip("x").split("x")
        return f"tensordesc<{MLIR_TYPES[m.group(2)]}[{', '.join(dims)}]>"
    return None


def ttir_types(ttir: str, name: str) -> list[str | None] | None:
    """The argument types of `tt.func @name(...)` in TTIR, as triton signature types."""
    m = re.search(r"tt\.func\s+(?:public\s+|private\s+)?@" + re.escape(name) + r"\(", ttir)
    if not m:
        return None
    depth, i = 1, m.end()
    quoted = False
    while i < len(ttir) and depth:
        ch = ttir[i]
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        i += 1
    types = []
    for arg in _split_top(ttir[m.end():i - 1], ","):
        _, _, rest = arg.partition(":")
        types.append(_mlir_type(_split_top(rest.strip(), " ")[0]) if rest.strip() else None)
    return types


def arg_type(info: object) -> str | None:
    """A launch's `extracted_args` entry -> the type triton's specialisation gives it."""
    if not isinstance(info, dict):
        return None
    kind = info.get("type")
    if kind == "tensor":
        t = TORCH_TYPES.get(str(info.get("dtype", "")).removeprefix("torch."))
        return "*" + t if t else None
    if kind == "int" and isinstance(info.get("value"), int):
        v = info["value"]
        return "i32" if -2**31 <= v < 2**31 else "i64" if -2**63 <= v < 2**63 else "u64"
    if kind == "float":
        return "fp32"
    if kind == "bool":
        return "u1"
    if kind == "TensorDescriptor":
        t = TORCH_TYPES.get(str((info.get("base") or {}).get("dtype", "")).removeprefix("torch."))
        shape = info.get("block_shape")
        if t and isinstance(shape, list):
            return f"tensordesc<{t}[{', '.join(str(int(d)) for d in shape)}]>"
    return None


def replay_of(event: dict[str, Any], runtime: list[str]) -> dict[str, Any] | None:
    """A launch event -> a replayable launch (record/replay_format.py), where the trace carries it:
    the grid, each tensor's dtype, shape, strides and storage offset (its buffer found from its
    `data_ptr`, so views of one storage alias; a buffer's size is what its views reach), scalar
    values, and a tensor's `min`/`max` when tritonparse kept them. None when the grid is missing."""
    grid, given = event.get("grid"), event.get("extracted_args") or {}
    if not (isinstance(grid, list) and 1 <= len(grid) <= 3 and all(isinstance(g, int) for g in grid)):
        return None
    bases: dict[int, int] = {}
    sizes: list[int] = []
    args: dict[str, Any] = {}
    for name in runtime:
        info = given.get(name)
        kind = info.get("type") if isinstance(info, dict) else None
        if isinstance(info, dict) and kind in ("int", "float", "bool") and "value" in info:
            args[name] = info["value"]
            continue
        try:
            assert isinstance(info, dict) and kind == "tensor"
            shape, stride = [int(x) for x in info["shape"]], [int(x) for x in info["stride"]]
            offset, size = int(info["storage_offset"]), int(info["element_size"])
            base = int(str(info["data_ptr"]), 16) - offset * size
        except (AssertionError, KeyError, TypeError, ValueError):
            args[name] = {"unrecorded": str(kind or "unknown")}
            continue
        index = bases.setdefault(base, len(bases))
        if index == len(sizes):
            sizes.append(0)
        reach = offset + sum((n - 1) * st for n, st in zip(shape, stride)) + 1 if all(shape) else offset
        sizes[index] = max(sizes[index], reach * size)
        args[name] = {"dtype": str(info.get("dtype", "")).removeprefix("torch."), "shape": shape, "stride": stride,
                      "offset": offset, "buffer": index}
        if isinstance(info.get("min"), (int, float)) and isinstance(info.get("max"), (int, float)):
            args[name]["range"] = [info["min"], info["max"]]
    return {"grid": grid + [1] * (3 - len(grid)), "args": args, "buffers": sizes}


def _value(v: object) -> object:
    """A constant as tritonparse wrote it -> the recorded file's spelling."""
    if isinstance(v, str):
        m = _DTYPE_TEXT.match(v)
        if m:
            return tl_name(m.group(1)) or {"repr": v}
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def _path(key: str) -> tuple[int, ...] | None:
    try:
        p = ast.literal_eval(key)
    except (ValueError, SyntaxError):
        return None
    return p if isinstance(p, tuple) and p and all(isinstance(i, int) for i in p) else None


def _num_warps(meta: dict[str, Any], payload: dict[str, Any]) -> object:
    """As the trace says it: checked with the rest of the line (launches.from_json)."""
    if isinstance(meta.get("num_warps_base"), int):
        return meta["num_warps_base"]
    for name, text in (payload.get("file_content") or {}).items():
        m = re.search(r'"ttg\.num-warps"\s*=\s*(\d+)', text) if name.endswith(".ttgir") and isinstance(text, str) \
            else None
        if m:
            return int(m.group(1))
    return meta.get("num_warps", DEFAULT_NUM_WARPS)


def _autotune(stack: Any) -> str | None:
    names = {f.get("name") for f in stack or () if isinstance(f, dict) and _AUTOTUNER in str(f.get("filename", ""))}
    return "bench" if "_bench" in names else "run" if names else None


class _Reader:
    """Turns events into recorded-file objects; collects what it leaves out and why."""

    def __init__(self, repo_files: Collection[str]) -> None:
        self.repo_files = repo_files
        self.notes: dict[str, None] = {}
        self.ignored: Counter[str] = Counter()

    def note(self, text: str) -> None:
        self.notes.setdefault(text, None)

    def kernel(self, comp: dict[str, Any], where: str) -> tuple[str, list[str]] | str | None:
        """(kernel id, params) of a compilation of a repository kernel; for another kernel the
        text it is ignored under; None (and a note) when the trace cannot say."""
        payload = comp.get("payload") or {}
        meta = payload.get("metadata") or {}
        name, source = meta.get("name"), payload.get("python_source") or {}
        file_path = source.get("file_path") or ""
        if meta.get("backend_name", "cuda") != "cuda":
            self.note(f"{where}: {name} was compiled for {meta.get('backend_name')}, not CUDA; left out")
            return None
        path = repo_path(file_path, self.repo_files)
        if path is None:
            return f"{file_path}::{name}"
        params = params_of(source.get("code") or "", name or "")
        if params is None:
            self.note(f"{where}: the trace holds no source with def {name}(...); {path}::{name} left out")
            return None
        return f"{path}::{name}", params

    def entry(self, comp: dict[str, Any], kid: str, params: list[str], args: dict[str, Any] | None,
              autotune: str | None, where: str) -> dict[str, Any] | None:
        payload = comp.get("payload") or {}
        meta = payload.get("metadata") or {}
        constexprs: dict[str, object] = {}
        for key, value in (meta.get("src_constants") or {}).items():
            p = _path(key)
            if p is None or p[0] >= len(params):
                self.note(f"{where}: constant {key} of {kid} does not fit its parameters; left out")
                return None
            if len(p) > 1:
                self.note(f"{where}: {kid} takes a tuple argument, which traces do not type; left out")
                return None
            constexprs[params[p[0]]] = _value(value)
        runtime = [p for p in params if p not in constexprs]
        types = [arg_type((args or {}).get(p)) for p in runtime] if args else []
        if not args or None in types:
            ttir = next((t for n, t in (payload.get("file_content") or {}).items()
                         if n.endswith(".ttir") and isinstance(t, str)), "")
            from_ir = ttir_types(ttir, meta.get("name", "")) or []
            if len(from_ir) != len(runtime):
                self.note(f"{where}: the trace does not give the argument types of {kid} "
                          "(trace launches too: TRITON_TRACE_LAUNCH=1); left out")
                return None
            types = [t or ir for t, ir in zip(types or from_ir, from_ir)]
        if None in types:
            self.note(f"{where}: an argument type of {kid} is not one ptxdiff knows; left out")
            return None
        signature = dict(zip(runtime, types))
        divisible = []
        for key, attrs in (meta.get("src_attrs") or {}).items():
            p = _path(key)
            if p and len(p) == 1 and p[0] < len(params) and params[p[0]] in signature \
                    and ["tt.divisibility", 16] in (attrs or []):
                divisible.append(params[p[0]])
        options = {k: meta[k] for k in sorted(OPTION_DEFAULTS) if k in meta and meta[k] != OPTION_DEFAULTS[k]}
        return {"kernel": kid, "params": params, "signature": signature, "constexprs": constexprs,
                "divisible_by_16": divisible, "num_warps": _num_warps(meta, payload),
                "num_stages": meta.get("num_stages", DEFAULT_NUM_STAGES), "options": options,
                "autotune": autotune, "via": "tritonparse"}


def read(folder: Path, repo_files: Collection[str]) -> recorded.Recording:
    """The launches of repository kernels in the raw traces under `folder`."""
    reader = _Reader(repo_files)
    comps: dict[str, list[tuple[dict[str, Any], str]]] = {}
    launches: list[tuple[dict[str, Any], str]] = []
    for event, where in events(folder):
        kind = event.get("event_type")
        if kind == "compilation":
            h = ((event.get("payload") or {}).get("metadata") or {}).get("hash")
            if h:
                comps.setdefault(h, []).append((event, where))
        elif kind == "launch":
            launches.append((event, where))
    kernels = {h: reader.kernel(*found[0]) for h, found in comps.items()}
    out: list[recorded.Launch] = []

    def add(obj: dict[str, Any] | None, where: str) -> None:
        if obj is None:
            return
        try:
            launch = recorded.from_json(obj, where)
        except ConfigError as e:
            reader.note(f"{e}; left out")
            return
        out.append(dataclasses.replace(launch, replay=tuple(map(replay_format.rounded, launch.replay))))

    launched: set[str] = set()      # kernels recorded from their launches, not their compilations
    seen: dict[tuple[object, ...], dict[str, Any] | None] = {}
    for event, where in launches:
        mode = _autotune(event.get("stack"))
        h = (event.get("compilation_metadata") or {}).get("hash")
        if mode == "bench":
            continue
        if h not in comps:
            reader.note(f"{where}: a launch of {event.get('name')} without its compilation event; left out")
            continue
        found_kernel = kernels[h]
        if not isinstance(found_kernel, tuple):
            if found_kernel is not None:
                reader.ignored[found_kernel] += 1
                launched.add(found_kernel)
            continue
        kid, params = found_kernel
        launched.add(kid)
        args = event.get("extracted_args") or {}
        key = (h, mode, tuple((p, arg_type(args.get(p))) for p in params))
        if key not in seen:
            seen[key] = reader.entry(comps[h][0][0], kid, params, args, "ran" if mode == "run" else None, where)
        obj = seen[key]
        shape = replay_of(event, list(obj["signature"])) if obj is not None else None
        add(None if obj is None else {**obj, "count": 1, **({"replay": [{**shape, "count": 1}]} if shape else {})},
            where)
    for h, found in comps.items():
        found_kernel = kernels[h]
        if (found_kernel[0] if isinstance(found_kernel, tuple) else found_kernel) in launched:
            continue
        for event, where in found:
            if not isinstance(found_kernel, tuple):
                if found_kernel is not None:
                    reader.ignored[found_kernel] += 1
                continue
            kid, params = found_kernel
            obj = reader.entry(event, kid, params, None, "all" if _autotune(event.get("stack")) else None, where)
            add(None if obj is None else {**obj, "count": 1}, where)
    return recorded.Recording(tuple(out), dict(reader.ignored), tuple(reader.notes), "tritonparse")
