"""Inside the command that `ptxdiff record` runs: what each kernel launch was specialised as.

Loaded by file path from the sitecustomize that `ptxdiff record` puts first on the child's
PYTHONPATH (never imported as `ptxdiff.…` there, so no module of the repository can stand in for
it); standard library only until the program imports triton, which is then patched in place:
`JITFunction.run` (a GPU launch), `InterpretedFunction.run` (TRITON_INTERPRET=1) and the
autotuner. Every launch is specialised by triton's own binder (`create_function_from_signature`
with `native_specialize_impl`, the code `JITFunction.run` runs), so the rules are triton's:
ints and pointer addresses divisible by 16, ints equal to 1 and None made constexprs,
`do_not_specialize` respected. Each process writes its distinct launches to its own file under
$PTXDIFF_RECORD_OUT as soon as it sees them, and the counts when it exits.

The parent imports this module too, for `tl_name` and `OPTION_DEFAULTS`.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.util
import inspect
import json
import math
import numbers
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any, TextIO

ENV_OUT = "PTXDIFF_RECORD_OUT"     # folder for the raw per-process files
ENV_ROOT = "PTXDIFF_RECORD_ROOT"   # the repository's work tree (real path)

# Launch options other than num_warps/num_stages, with the value that needs no saying (triton's
# CUDAOptions defaults); a launch that passes the default records nothing for it.
OPTION_DEFAULTS = {"num_ctas": 1, "maxnreg": None, "enable_fp_fusion": True, "launch_cooperative_grid": False,
                   "launch_pdl": False}
DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
MAX_SHAPES = 64          # distinct launch shapes tracked per spec and process (the rest are counted, not kept)
STATS_ELEMENTS = 1 << 24  # a tensor's values are read from at most this many elements (its first ones)

# triton's dtype text (str(tl.float16) == "fp16") -> its name in triton.language, the spelling
# ptxdiff's config uses for dtype constexprs ("tl.float16").
_TL_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "fp8e4nv": "float8e4nv",
             "fp8e5": "float8e5", "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16", "fp8e4b15": "float8e4b15",
             **{n: n for n in ("int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")}}


def tl_name(dtype_text: str) -> str | None:
    """"fp16" -> "tl.float16"; None for what is not a plain triton dtype."""
    name = _TL_NAMES.get(dtype_text)
    return f"tl.{name}" if name else None


def jsonable(value: Any, kernel_id_of: Callable[[Any], str] | None = None) -> Any:
    """A constexpr or option value as JSON: numbers, strings, None and bools as they are, a
    triton dtype as "tl.float16", tuples as lists, a @triton.jit function as {"jit": id}, a
    non-finite float as {"float": "inf"}, anything else as {"repr": ...} (shown, never compiled)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, (tuple, list)):
        return [jsonable(v, kernel_id_of) for v in value]
    cls = type(value)
    if cls.__module__.startswith("triton.language"):
        if cls.__name__ == "constexpr":
            return jsonable(value.value, kernel_id_of)
        if hasattr(value, "primitive_bitwidth") or cls.__name__ == "dtype":
            name = tl_name(str(value))
            if name:
                return name
    fn = getattr(value, "fn", None)
    if kernel_id_of and cls.__module__.startswith("triton.runtime") and hasattr(fn, "__code__"):
        return {"jit": kernel_id_of(fn)}
    return {"repr": repr(value)[:200]}


def kernel_id(fn: Any, root: str) -> str:
    """`<repo-relative posix path>::<name>` for a function defined in a file under `root`; the
    file's real path in its place otherwise (the parent ignores those and says so)."""
    real = os.path.realpath(fn.__code__.co_filename)
    rel = os.path.relpath(real, root)
    inside = os.path.isfile(real) and not rel.startswith(os.pardir + os.sep) and rel != os.pardir
    return f"{rel.replace(os.sep, '/') if inside else real}::{fn.__name__}"


Pending = tuple[object, str, dict[str, Any], list[str], Any]   # (name, spec text, bound, run-time names, grid)
LaunchKey = tuple[str, str | None]   # (spec text, launch shape key or None)


class _State(threading.local):
    """Where this thread is: in an autotuner's benchmark ("bench"), enumerating its configs
    without running them ("all_dry"), in its final launch ("ran"), or in the launch after an
    enumeration ("suppress")."""

    mode: str | None = None
    # the launches an enumeration recorded, waiting for the launch that follows it: their values'
    # ranges are read after it ran (the outputs it wrote, never what torch.empty held)
    pending: list[Pending] | None = None


_state = _State()
Binder = Callable[..., tuple[dict[str, Any], list[tuple[Any, Any]], dict[str, Any]]]   # triton's binder
_AUTOTUNE_OF_MODE: dict[str | None, str] = {"ran": "ran", "all_dry": "all"}   # a launch's `autotune`


class _Mode:
    def __init__(self, mode: str | None) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        self.before, _state.mode = _state.mode, self.mode

    def __exit__(self, *exc: object) -> None:
        _state.mode = self.before


class Recorder:
    """This process's distinct launches and their counts."""

    def __init__(self, out_dir: str, root: str) -> None:
        self.out_dir, self.root = out_dir, root
        # raw function -> (kernel id, binder or None when outside); ("torch.compile", id) -> (id or None, None)
        self.kernels: dict[object, tuple[Any, Binder | None]] = {}
        self.warned: set[str] = set()
        self._reset()

    def _reset(self) -> None:
        self.lock = threading.Lock()  # new after a fork too: another thread may have held the old one
        self.counts: dict[LaunchKey, int] = {}
        self.written: dict[LaunchKey, int] = {}
        self.shapes: dict[LaunchKey, str] = {}     # (spec, shape key) -> the shape with its first values' ranges
        self.tracked: dict[str, int] = {}      # spec -> distinct shapes tracked
        self.file: TextIO | None = None
        self.pid = os.getpid()

    def _open(self) -> TextIO:
        if self.file is None:
            fd, _ = tempfile.mkstemp(dir=self.out_dir, prefix=f"{self.pid}-", suffix=".jsonl")
            self.file = os.fdopen(fd, "w", encoding="ascii")
        return self.file

    def add(self, text: str, shape: str | None = None) -> None:
        """Count a launch; a (spec, launch shape) seen for the first time is written at once (a
        process that ends by os._exit, like a multiprocessing child, still leaves its launches)."""
        key = (text, shape)
        with self.lock:
            if key in self.counts:
                self.counts[key] += 1
                return
            self.counts[key] = 1
            self._write([(key, 1)])

    def flush(self) -> None:
        with self.lock:
            if self.pid == os.getpid():
                self._write([(t, n - self.written.get(t, 0)) for t, n in self.counts.items()
                             if n > self.written.get(t, 0)])

    def _write(self, counts: list[tuple[LaunchKey, int]]) -> None:
        if not counts:
            return
        try:
            f = self._open()
            for key, n in counts:
                text, shape = key
                full = self.shapes.get(key, "null") if shape else "null"
                f.write(f'{{"count": {n}, "launch": {text}, "shape": {full}}}\n')
                self.written[key] = self.written.get(key, 0) + n
            f.flush()
        except OSError as e:  # the recording went away (a process outliving `ptxdiff record`)
            self.warn("cannot write this process's launches", e)

    def warn(self, what: str, error: BaseException) -> None:
        """Say it once on stderr; the user's program goes on."""
        if what not in self.warned:
            self.warned.add(what)
            print(f"ptxdiff record: {what}: {type(error).__name__}: {error}", file=sys.stderr)

    def kernel(self, fn: Any, jit_params: Any = None, dns: dict[str, Any] | None = None) -> tuple[str, Binder | None]:
        """(kernel id, binder); the binder is None for kernels outside the repository."""
        known = self.kernels.get(fn)
        if known is None:
            kid = kernel_id(fn, self.root)
            binder = None
            if not os.path.isabs(kid.rpartition("::")[0]):
                binder = _binder(fn, jit_params, dns or {})
            known = self.kernels[fn] = (kid, binder)
        return known

    def entry(self, fn: Any, args: Sequence[Any], kwargs: dict[str, Any], via: str, jit_params: Any = None,
              dns: dict[str, Any] | None = None) -> tuple[str, dict[str, Any], list[str]]:
        """The canonical text of this launch's spec (recorded.FIELDS order, without the count),
        the bound arguments and the names of the run-time (not constexpr) parameters."""
        kid, binder = self.kernel(fn, jit_params, dns)
        if binder is None:
            return json.dumps({"kernel": kid}), {}, []
        bound, specialization, options = binder(*args, **kwargs)
        names = list(bound)
        signature, constexprs, divisible = {}, {}, []

        def leaves(name: str, ty: Any, key: Any, value: Any) -> None:
            """Constants and divisibility of one argument, down into tuple elements (`t[0]`)."""
            if ty == "constexpr":
                constexprs[name] = jsonable(value, self.id_of)
            elif isinstance(ty, tuple):
                for i, (t, k) in enumerate(zip(ty, key)):
                    leaves(f"{name}[{i}]", t, k, value[i])
            elif isinstance(key, str) and "D" in key:  # BaseBackend.parse_attr: "D" -> tt.divisibility 16
                divisible.append(name)

        for name, (ty, key) in zip(names, specialization):
            if ty != "constexpr":
                signature[name] = _types(ty) if isinstance(ty, tuple) else ty
            leaves(name, ty, key, bound[name])
        num_warps = options.pop("num_warps", None)
        num_stages = options.pop("num_stages", None)
        extra = {k: jsonable(v) for k, v in sorted(options.items()) if OPTION_DEFAULTS.get(k, object()) != v}
        mode = _state.mode
        text = json.dumps({
            "kernel": kid, "params": names, "signature": signature, "constexprs": constexprs,
            "divisible_by_16": divisible,
            "num_warps": DEFAULT_NUM_WARPS if num_warps is None else num_warps,
            "num_stages": DEFAULT_NUM_STAGES if num_stages is None else num_stages,
            "options": extra, "autotune": _AUTOTUNE_OF_MODE.get(mode), "via": via,
        }, ensure_ascii=True)
        return text, bound, [n for n, (ty, _) in zip(names, specialization) if ty != "constexpr"]

    def shape(self, text: str, bound: dict[str, Any], runtime: list[str], grid: Any) -> str | None:
        """This launch's shape (record/replay_format.py's format) as the key it is counted under; its values'
        ranges are read only the first time the shape is seen."""
        if not runtime or self.tracked.get(text, 0) >= MAX_SHAPES:
            return None
        g = grid(bound) if callable(grid) else grid
        g = [int(x) for x in g] + [1] * (3 - len(g))
        buffers: dict[int, tuple[int, int]] = {}
        args = {name: _arg(bound[name], buffers) for name in runtime}
        key = json.dumps({"grid": g, "args": args, "buffers": [size for _, size in buffers.values()]},
                         ensure_ascii=True, allow_nan=False)
        if (text, key) not in self.shapes:
            for name in runtime:
                if "buffer" in (args[name] if isinstance(args[name], dict) else {}):
                    args[name].update(_stats(bound[name]))
            with self.lock:
                self.tracked[text] = self.tracked.get(text, 0) + 1
                self.shapes[(text, key)] = json.dumps({"grid": g, "args": args, "buffers": [
                    size for _, size in buffers.values()]}, ensure_ascii=True, allow_nan=False)
        return key

    def id_of(self, fn: Any) -> str:
        return kernel_id(fn, self.root)

    def launch(self, fn: Any, args: Sequence[Any], kwargs: dict[str, Any], via: str, run: Callable[[], Any],
               grid: Any = None, jit_params: Any = None, dns: dict[str, Any] | None = None) -> Any:
        """Run the launch (`run()`), then count it; enumerating configs records without running."""
        mode = _state.mode
        if mode in ("bench", "suppress"):
            return run()
        try:
            text, bound, runtime = self.entry(fn, args, kwargs, via, jit_params, dns)
        except Exception as e:  # never break the user's program over a record
            self.warn(f"cannot read a launch of {getattr(fn, '__name__', fn)!s}", e)
            return None if mode == "all_dry" else run()
        if mode == "all_dry":
            if _state.pending is None:
                _state.pending = []
            _state.pending.append((getattr(fn, "__name__", fn), text, bound, runtime, grid))
            return None
        with _Mode(None):
            result = run()
        self.count(getattr(fn, "__name__", fn), text, bound, runtime, grid)
        return result

    def count(self, name: object, text: str, bound: dict[str, Any], runtime: list[str], grid: Any) -> None:
        """Count a launch that ran, with its shape: values are read after the launch, so a
        buffer the kernel writes shows what it wrote (deterministic), not what it held."""
        try:
            shape = self.shape(text, bound, runtime, grid)
        except Exception as e:  # the spec is still recorded, without a replayable launch
            self.warn(f"cannot read the arguments of a launch of {name!s}", e)
            shape = None
        self.add(text, shape)

    def settle(self) -> None:
        """Count the launches an autotuner's enumeration recorded, now that one of them ran."""
        pending, _state.pending = _state.pending or [], None
        for item in pending:
            self.count(*item)

    def inductor(self, tuner: Any) -> None:
        """Count a launch of torch.compile's generated code (`CachingAutotuner.run`) under the
        repository's kernel it copies, with the signature Inductor compiled (no replayable shape)."""
        key = ("torch.compile", id(tuner.fn))   # looked up once per compiled copy, not per launch
        if key not in self.kernels:
            self.kernels[key] = (_repo_kernel(tuner.fn, self.root), None)
        kid = self.kernels[key][0]
        if kid is None:
            return
        meta, names = tuner.triton_meta, list(tuner.fn.arg_names)
        config = tuner.launchers[0].config if tuner.launchers else None
        given = {**meta.get("constants", {}), **(dict(config.kwargs) if config is not None else {})}
        attrs = (meta.get("configs") or [{}])[0]
        divisible = [names[k[0]] for k, v in attrs.items() if ["tt.divisibility", 16] in v and k[0] < len(names)] \
            if isinstance(attrs, dict) else []
        self.add(json.dumps({
            "kernel": kid, "params": names,
            "signature": {p: t for p, t in meta["signature"].items() if t != "constexpr"},
            "constexprs": {p: jsonable(given.get(p), self.id_of) for p, t in meta["signature"].items()
                           if t == "constexpr"},
            "divisible_by_16": divisible,
            "num_warps": getattr(config, "num_warps", None) or DEFAULT_NUM_WARPS,
            "num_stages": getattr(config, "num_stages", None) or DEFAULT_NUM_STAGES,
            "options": {}, "autotune": None, "via": "torch.compile"}, ensure_ascii=True))

def _arg(value: Any, buffers: dict[int, tuple[int, int]]) -> Any:
    """A run-time argument as record/replay_format.py records it: a tensor's layout in its buffer (buffers:
    storage address -> (index, bytes), shared by the launch's arguments), a scalar's value."""
    if value is None or isinstance(value, (bool, str, float, numbers.Integral)):
        return jsonable(value)
    if all(hasattr(value, a) for a in ("data_ptr", "untyped_storage", "stride", "storage_offset", "dtype")):
        storage = value.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in buffers:
            buffers[ptr] = (len(buffers), int(storage.nbytes()))
        return {"dtype": str(value.dtype).rpartition(".")[2], "shape": [int(x) for x in value.shape],
                "stride": [int(x) for x in value.stride()], "offset": int(value.storage_offset()),
                "buffer": buffers[ptr][0]}
    return {"unrecorded": type(value).__name__}


def _stats(t: Any) -> dict[str, object]:
    """What kind of values a tensor holds: an integer's exact range, a float's finite range (the
    parent rounds it outward) and whether it holds NaN or Inf."""
    try:
        if t.numel() == 0 or t.dtype.is_complex:
            return {}
        v = t.detach()
        if v.numel() > STATS_ELEMENTS:  # bounded memory and time in the user's program
            if not v.is_contiguous():
                return {}
            v = v.reshape(-1)[:STATS_ELEMENTS]
        if not t.dtype.is_floating_point:
            return {"range": [int(v.min()), int(v.max())]}
        f = v.float()
        nan, finite = f.isnan(), f.isfinite()
        out: dict[str, object] = {}
        values = f[finite]
        if values.numel():
            out["range"] = [float(values.min()), float(values.max())]
        if bool(nan.any()):
            out["nan"] = True
        if bool((~finite & ~nan).any()):
            out["inf"] = True
        return out
    except Exception:  # a dtype without min/max: the replay makes values of its own kind
        return {}


def _types(ty: tuple[Any, ...]) -> list[Any]:
    return [_types(t) if isinstance(t, tuple) else t for t in ty]


def _binder(fn: Any, jit_params: Any, dns: dict[str, Any]) -> Binder:
    """triton's own argument binder and specialiser for `fn`, as JITFunction.run builds it (the
    backend's integer/tensor rules are BaseBackend's, which CUDA's backend does not override)."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime import jit

    if jit_params is None:  # the interpreter's InterpretedFunction: build the JITFunction it stands for
        jf = jit.JITFunction(fn, do_not_specialize=dns.get("do_not_specialize"),
                             do_not_specialize_on_alignment=dns.get("do_not_specialize_on_alignment"))
        jit_params = jf.params
    binder: Binder = jit.create_function_from_signature(inspect.signature(fn), jit_params, BaseBackend)
    return binder


_recorder: Recorder | None = None
_gpu_via: list[str] = []


def _via_gpu() -> str:
    if not _gpu_via:
        try:
            from triton.runtime import driver
            _gpu_via.append(driver.active.get_current_target().backend)
        except Exception:
            _gpu_via.append("gpu")
    return _gpu_via[0]


def _wrap_run(cls: Any, via: Callable[[], str], launch_info: Callable[[Any], dict[str, Any]]) -> None:
    """Count each real launch of `cls` (JITFunction or InterpretedFunction); warmups are not launches."""
    original = cls.run

    def run(self: Any, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        return _recorder.launch(  # type: ignore[union-attr]  # patched by install() only
            self.fn, args, kwargs, via(), lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs),
            grid, **launch_info(self))

    cls.run = run


def _patch_jit(module: ModuleType) -> None:
    _wrap_run(module.JITFunction, _via_gpu, lambda f: {"jit_params": f.params})


def _patch_interpreter(module: ModuleType) -> None:
    _wrap_run(module.InterpretedFunction, lambda: "interpreter", lambda f: {"dns": f.kwargs})


def _interpreting() -> bool:
    try:
        from triton import knobs
        return bool(knobs.runtime.interpret)
    except Exception:
        return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _patch_autotuner(module: ModuleType) -> None:
    """On a GPU the Config the autotuner picked is what launches (its benchmark runs are not
    launches of the program). The interpreter has no timing and no driver to benchmark with:
    every Config is recorded (`autotune: "all"`) and the first one runs."""
    cls = module.Autotuner
    original_run, original_bench = cls.run, cls._bench

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _interpreting():
            with _Mode("ran"):
                return original_run(self, *args, **kwargs)
        for config in self.configs:
            try:
                with _Mode("all_dry"):
                    self.fn.run(*args, **kwargs, **config.all_kwargs())
            except Exception as e:
                _recorder.warn(  # type: ignore[union-attr]  # patched by install() only
                    f"cannot read a Config of {getattr(self.base_fn, '__name__', 'a kernel')}", e)
        try:
            with _Mode("suppress"):
                return original_run(self, *args, **kwargs)
        finally:
            _recorder.settle()  # type: ignore[union-attr]  # patched by install() only

    def _bench(self: Any, *args: Any, config: Any, **meta: Any) -> Any:
        if _interpreting():
            return [0.0, 0.0, 0.0]
        with _Mode("bench"):
            return original_bench(self, *args, config=config, **meta)

    cls.run, cls._bench = run, _bench


def _repo_kernel(fn: Any, root: str) -> str | None:
    """The repository's kernel that torch.compile's copy `fn` was made from: a jit function of that
    name (Inductor keeps it, or adds `_N`) in a module of the repository the program imported."""
    name = getattr(getattr(fn, "fn", fn), "__name__", "")
    stem, _, tail = name.rpartition("_")
    for wanted in dict.fromkeys((name, stem if tail.isdigit() else name)):
        for mod in list(sys.modules.values()):
            obj = getattr(mod, "__dict__", {}).get(wanted)
            while obj is not None and not inspect.isfunction(obj) and hasattr(obj, "fn"):
                obj = obj.fn
            if inspect.isfunction(obj) and not os.path.isabs(kid := kernel_id(obj, root).rpartition("::")[0]):
                return f"{kid}::{obj.__name__}"
    return None


def patch_inductor(module: ModuleType) -> None:
    """torch.compile's generated code launches its own compile of a kernel (Inductor copies its
    source and launches it through `CachingAutotuner.run`, never `JITFunction.run`): those
    launches are recorded too, with the types Inductor gave them (a Python float is fp64 there,
    fp32 in an eager launch; checked on an H100 with torch 2.11 and triton 3.6)."""
    cls = getattr(module, "CachingAutotuner", None)
    if cls is None:
        return
    original = cls.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if not kwargs.get("benchmark_run") and _recorder is not None:
            try:
                _recorder.inductor(self)
            except Exception as e:  # never break the user's program over a record
                _recorder.warn("cannot read a launch of torch.compile's generated code", e)
        return result

    cls.run = run


_PATCHES = {"triton.runtime.jit": _patch_jit, "triton.runtime.interpreter": _patch_interpreter,
            "triton.runtime.autotuner": _patch_autotuner, "torch._inductor.runtime.triton_heuristics": patch_inductor}


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then patches the module it made."""

    def __init__(self, inner: importlib.abc.Loader, patch: Callable[[ModuleType], None]) -> None:
        self.inner, self.patch = inner, patch

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        self.patch(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


def install() -> None:
    """Patch triton now if it is imported, else when it is."""
    global _recorder
    out, root = os.environ.get(ENV_OUT), os.environ.get(ENV_ROOT)
    if not out or not root or _recorder is not None:
        return
    _recorder = Recorder(out, root)
    atexit.register(_recorder.flush)
    os.register_at_fork(after_in_child=_recorder._reset)  # a forked child counts for itself, in its own file
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, _PatchOnImport())


def chain_sitecustomize(here: str) -> None:
    """Run the sitecustomize that ours shadows (a distribution's or a virtualenv's), if any."""
    from importlib.machinery import PathFinder

    here = os.path.realpath(here)
    path = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)
