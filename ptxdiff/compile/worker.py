"""The compile worker: runs in its own process, bound to one revision, imports triton.

It builds each kernel from its effective source (instantiate/builder.py; or, when the user asks, imports
the revision's modules from git objects with instantiate/importer.py), turns it into specs
(specs/resolve.py),
compiles each spec for an explicit GPUTarget (no GPU needed), and measures the result from the
PTX text, ptxas's -v log and cuobjdump's view of the cubin (kept, packed, for the HTML report's SASS).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import io
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import traceback
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ptxdiff import targets
from ptxdiff.binaries import pin_fp_fusion, run_tool, tool_path, tool_paths
from ptxdiff.compile import disassemble
from ptxdiff.compile import printed as captured
from ptxdiff.compile.invoke import private_triton_home, triton_compile
from ptxdiff.compile.protocol import (
    COMPILE_FAILED,
    Answer,
    CompileAnswer,
    Failure,
    Outcome,
    Request,
    SpecsAnswer,
    compile_failure,
    out_of_memory,
)
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.errors import SandboxError, ToolError
from ptxdiff.metrics import ptx as ptxmod
from ptxdiff.metrics import sass
from ptxdiff.metrics.counts import Metrics
from ptxdiff.repo_config import KernelConfig
from ptxdiff.sandbox.enter import begin, seal
from ptxdiff.sandbox.policy import Policy
from ptxdiff.source.modules import ModuleIndex
from ptxdiff.specs.declared import AbsentKernel, OtherBackend, TritonsOwn, config_options
from ptxdiff.specs.plan import Plan
from ptxdiff.specs.resolve import Declared, Spec, SpecError, resolve

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from ptxdiff.dynamic.runner import RunWorker
    from ptxdiff.git.repo import Repo
    from ptxdiff.git.values import Side
    from ptxdiff.instantiate.builder import Builder

WORKER_ENV = {
    "TRITON_ALWAYS_COMPILE": "1",      # triton's own cache would skip ptxas and so its -v log
    "TRITON_DUMP_PTXAS_LOG": "1",      # ptxas -v: spill stores/loads, stack frame
}


def prepare_env() -> None:
    for k, v in WORKER_ENV.items():
        os.environ[k] = v
    pin_fp_fusion()


class _DeferredTorch(types.ModuleType):
    """Stands in for torch until something reads an attribute of it; then torch is imported
    for real and every access is passed on to it."""

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get("torch") is self:
            del sys.modules["torch"]
        return getattr(importlib.import_module("torch"), name)


def defer_torch() -> None:
    """Make `import torch` cheap in this worker: kernel modules import torch at the top for
    their host code, compiling never touches it, and importing it costs ~2 s. Code that does
    use torch still gets the real module on first use."""
    if "torch" in sys.modules or importlib.util.find_spec("torch") is None:
        return
    stub = _DeferredTorch("torch")
    stub.__spec__ = None
    sys.modules["torch"] = stub


def _unwrap(obj: Any) -> tuple[object, Declared]:
    """JITFunction behind autotune/heuristics wrappers, with what the wrappers add."""
    autotune: tuple[Any, ...] = ()
    heuristics: dict[str, Any] = {}
    seen = 0
    # Autotuner/Heuristics also carry `arg_names`; only the JITFunction has `params`
    while not hasattr(obj, "params") and hasattr(obj, "fn") and seen < 8:
        seen += 1
        if hasattr(obj, "configs"):
            autotune = tuple((dict(c.kwargs), c.num_warps, c.num_stages, config_options(c)) for c in obj.configs)
        if hasattr(obj, "values") and isinstance(obj.values, dict):
            heuristics = {**obj.values, **heuristics}
        obj = obj.fn
    if not hasattr(obj, "params") or not hasattr(obj, "arg_names"):
        raise SpecError(f"{obj!r} is not a triton JITFunction")
    params = tuple(obj.arg_names)
    constexpr_params, defaults = set(), {}
    for p in obj.params:
        if p.is_constexpr:
            constexpr_params.add(p.name)
            if p.default is not inspect.Parameter.empty:
                defaults[p.name] = p.default
    return obj, Declared(params, frozenset(constexpr_params), defaults, autotune, heuristics)


def measure(ptx: str, cubin: bytes, ptxas_log: str, spec: Spec, cc: int, dynamic_shared: int) -> Metrics:
    """All metrics of one compiled spec (the JSON report's keys: docs/usage.md, Metrics)."""
    p = ptxmod.metrics(ptx)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        dump = run_tool("cuobjdump", ["-res-usage", f.name])
    names = ptxmod.entry_names(ptx)
    res = sass.resource_usage(dump, names[0] if names else None)
    said = ptxas_log if "bytes spill stores" in ptxas_log else own_ptxas_log(ptx, cc)
    log = sass.ptxas_log(said)
    if log.spill_store_bytes is None or log.spill_load_bytes is None:
        raise ToolError("ptxas -v printed no spill counts", said)
    shared = max(res.shared_bytes, dynamic_shared)
    options: dict[str, Any] = dict(spec.options)   # what triton compiled with: a cap and a count are ints
    return Metrics(
        **p.as_dict(),
        regs=res.regs,
        spill_store_bytes=log.spill_store_bytes,
        spill_load_bytes=log.spill_load_bytes,
        stack_bytes=res.stack_bytes,
        local_bytes=res.local_bytes,
        shared_bytes=shared,
        sass_instrs=sass.sass_instrs(cubin, names[0] if names else ""),
        occupancy=targets.occupancy(cc, res.regs, spec.num_warps, shared),
        num_warps=spec.num_warps,
        num_stages=spec.num_stages,
        maxnreg=options.get("maxnreg") or 0,      # 0: no cap
        num_ctas=options.get("num_ctas") or 1,
    )


def own_ptxas_log(ptx: str, cc: int) -> str:
    """ptxas -v's report on `ptx`, from the toolchain's ptxas, where triton did not print it
    (before TRITON_DUMP_PTXAS_LOG: triton 3.2 deletes it): the spill counts come from there.
    The wheel's ptxas first, else its newer ptxas-blackwell (a PTX ISA the first does not know)."""
    found = re.search(r"^\.target\s+(sm_\w+)", ptx, re.MULTILINE)   # sm_90a where triton asked for it
    gpu = found.group(1) if found else f"sm_{cc}"
    said = ""
    with tempfile.TemporaryDirectory() as folder:
        src = os.path.join(folder, "k.ptx")
        with open(src, "w", encoding="utf-8") as f:
            f.write(ptx)
        for tool in ("ptxas", "ptxas-blackwell"):
            try:
                proc = subprocess.run([tool_path(tool), "-v", f"--gpu-name={gpu}", src, "-o",
                                       os.path.join(folder, "k.cubin")], capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.SubprocessError, ToolError):
                continue
            said = proc.stderr + proc.stdout
            if "bytes spill stores" in said:
                break
    return said


def ptxas_error(printed: str) -> str | None:
    """`ptxas: Feature 'cvt.e2m1x2.f32' not supported on .target 'sm_90a' (and 7 more)` from
    what the compile printed, or None; where ptxas said no error but stopped (`ptxas fatal :
    Memory allocation failure`), that."""
    lines = printed.splitlines()
    errors = [line.split("error", 1)[1].lstrip(" :") for line in lines
              if line.startswith("ptxas") and " error " in f" {line} " and "fatal" not in line]
    if not errors:
        fatal = [line.split("fatal", 1)[1].lstrip(" :") for line in lines
                 if line.startswith("ptxas fatal") and "aborted due to errors" not in line]
        return f"ptxas: {fatal[0]}" if fatal else None
    more = len(errors) - 1
    return f"ptxas: {errors[0]}" + (f" (and {more} more)" if more else "")


# MLIR's words for the pass a compile failed in (`Pipeline failed while executing
# [`TritonGPUAccelerateMatmul` on 'builtin.module' operation]`)
FAILED_PASS = re.compile(r"Pipeline failed while executing \[`(\w+)`")


def try_compile(jit: Any, spec: Spec, cc: int) -> tuple[Any, Exception | None, str]:
    """(compiled kernel or None, the exception, what the compile printed). A compile that failed in
    one of MLIR's passes carries the pass's name (`failed_pass`: the refit's suspects)."""
    out = io.StringIO()
    start = captured.mark()
    try:
        with contextlib.redirect_stdout(out):
            return triton_compile(jit, spec, cc), None, out.getvalue()
    except Exception as e:
        if found := FAILED_PASS.search(captured.printed_after(start)):
            e.failed_pass = found.group(1)  # type: ignore[attr-defined]
        return None, e, out.getvalue()


def compile_spec(jit: Any, spec: Spec, cc: int, retype: bool = False) -> CompileAnswer:
    """Metrics of one spec, or its error and its kind; with `retype`, a type error under guessed
    types also says which types compile (retype.py), and a shape error under guessed sizes which
    sizes fit (refit.py), for the engine to compile both sides with."""
    ck, error, printed = try_compile(jit, spec, cc)
    if error is not None:
        log = printed + "".join(traceback.format_exception_only(type(error), error))
        from ptxdiff.instantiate.locate import described
        # `ops/relu.py:12:44: NameError: ... (at: y = relu(x))`: the message whole, at the file's own line;
        # ptxas's own first error where ptxas refused the PTX (triton says only its exit status)
        said = ptxas_error(log)
        failed: dict[str, Any] = {"error": f"{COMPILE_FAILED} {said or described(error, jit)}",
                        "log": log[-20000:]}
        if retype:
            from ptxdiff.compile import refit
            from ptxdiff.compile import retype as retypemod
            found = retypemod.search(lambda s: try_compile(jit, s, cc)[1], spec, error, jit)
            if found:
                failed["retype"] = found
            else:
                sizes = refit.search(lambda s: try_compile(jit, s, cc)[1], spec, error, jit)
                if sizes:
                    failed["refit"] = sizes
        return CompileAnswer(failed, compile_failure(failed["error"]))
    ptx_text = ck.asm["ptx"]
    try:
        metrics = measure(ptx_text, ck.asm["cubin"], printed, spec, cc, int(ck.metadata.shared))
    except ToolError as e:
        return CompileAnswer({"error": str(e), "log": e.log}, Failure.TOOL_ERROR)
    kept = disassemble.pack(ck.asm["cubin"])    # disassembled only if an HTML page asks (disassemble.py)
    return CompileAnswer({"metrics": metrics.as_json(), "ptx": ptxmod.normalise(ptx_text),
                          "loc": ptxmod.source_lines(ptx_text).as_json(), **({"cubin": kept} if kept is not None else {})})


class Worker:
    """State of one worker process: one revision's kernels, built from their effective source
    (hermetic, the default) or, when the user asked for it, by importing the revision's modules."""

    def __init__(self, repo_dir: str, side: Side, roots: tuple[str, ...], imports: bool = False) -> None:
        from ptxdiff.git import repo as git

        prepare_env()
        if side.triton2:   # a release standing in for a triton before 3.0 reads kernels as that one did
            from ptxdiff.instantiate import namespace
            namespace.read_as_triton2()
        git.bound_mapped_memory()
        repo = git.Repo(repo_dir, fetches=False)
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") not in (repo.workdir, os.getcwd())]
        self.repo, self.side = repo, side
        self.index = ModuleIndex(repo.snapshot(side), roots)
        self.tag = side.tag
        self.imports = imports
        if imports:
            from ptxdiff.instantiate import importer
            defer_torch()
            importer.install(self.index, side.tag)
        self._builders: dict[int, Builder] = {}
        self._loaded: dict[tuple[Any, ...], tuple[object, Declared]] = {}

    def reads(self) -> list[str]:
        return repository_reads(self.repo, [(self.side, self.index)])

    def _builder(self, cc: int) -> Builder:
        if cc not in self._builders:
            from ptxdiff.evaluator.interp import Interp
            from ptxdiff.instantiate.builder import Builder
            from ptxdiff.targets import Device
            self._builders[cc] = Builder(Interp(self.index, Device.for_target(cc)), self.tag)
        return self._builders[cc]

    def load(self, kernel: Kernel, cc: int) -> tuple[object, Declared]:
        key = (kernel.id, None if self.imports else cc)
        if key not in self._loaded:
            self._loaded[key] = self._import(kernel) if self.imports else self._builder(cc).kernel(kernel)
        return self._loaded[key]

    def _import(self, kernel: Kernel) -> tuple[object, Declared]:
        try:
            module = importlib.import_module(kernel.module)
        except BaseException as e:  # SystemExit from a module is an import failure too
            tb = traceback.format_exception(type(e), e, e.__traceback__)
            raise SpecError(f"import {kernel.module} failed: {type(e).__name__}: {e}".splitlines()[0]
                            + "\n" + "".join(tb[-6:])) from None
        obj = getattr(module, kernel.name, None)
        if obj is None:
            raise SpecError(f"{kernel.module} has no attribute {kernel.name} after import")
        return _unwrap(obj)

    def specs(self, kernel: Kernel, config: KernelConfig, cc: int, plan: Plan) -> SpecsAnswer:
        """The kernel's specs; on the hermetic path a spec that cannot be had is a fact about the
        effective source, config and plan (an answer with the error and its kind), cached like a result."""
        try:
            _, declared = self.load(kernel, cc)
            return SpecsAnswer(tuple(resolve(kernel, declared, config, plan)))
        except SpecError as e:
            if self.imports:
                raise
            if isinstance(e, AbsentKernel):
                return SpecsAnswer(error=str(e), failure=Failure.ABSENT)
            if isinstance(e, TritonsOwn):
                return SpecsAnswer(error=str(e), failure=Failure.NOT_THIS_TOOLCHAIN, tritons_own=e.dotted)
            if isinstance(e, OtherBackend):
                return SpecsAnswer(error=str(e), failure=Failure.OTHER_BACKEND, other_backend=e.backend)
            return SpecsAnswer(error=str(e), failure=Failure.NO_SPECS)

    def compile(self, kernel: Kernel, spec: Spec, cc: int) -> CompileAnswer:
        jit, _ = self.load(kernel, cc)
        answer = compile_spec(jit, spec, cc, retype=not self.imports)
        if answer.failure is not None and not self.imports:
            error = self._builder(cc).explain(answer.result["error"], kernel.paths)
            failure = compile_failure(error) if answer.failure is not Failure.TOOL_ERROR else answer.failure
            return CompileAnswer({**answer.result, "error": error}, failure)
        return answer


def repository_reads(repo: Repo, sides: list[tuple[Side, ModuleIndex]]) -> list[str]:
    """What of the repository a sealed worker may read: the object stores (blobs of commits
    and the index) and, for a side that is the work tree, its Python files one by one (not .git,
    not the other files)."""
    objects = os.path.join(repo.common_dir, "objects")
    out = [objects, *_alternates(objects)]
    for side, index in sides:
        if side.commit is None:
            out += [os.path.join(repo.workdir, p) for p in sorted(index.snapshot.paths) if p.endswith(".py")]
    return out


def _alternates(objects: str, depth: int = 0) -> list[str]:
    """Object stores this one borrows from (objects/info/alternates), recursively as git reads them."""
    try:
        with open(os.path.join(objects, "info", "alternates"), encoding="utf-8", errors="surrogateescape") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except OSError:
        return []
    out = []
    for line in lines:
        path = os.path.normpath(os.path.join(objects, line))
        out.append(path)
        if depth < 5:
            out += _alternates(path, depth + 1)
    return out


def die_with_parent() -> None:
    """A worker must not outlive the run that started it (`kill -9` of a diff): on Linux the
    kernel kills it when its parent exits; elsewhere a thread notices the parent is gone."""
    import signal
    import threading
    import time

    parent = os.getppid()
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, signal.SIGKILL, 0, 0, 0) == 0:  # PR_SET_PDEATHSIG
            if os.getppid() != parent:
                os._exit(1)
            return
    except (OSError, AttributeError):
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def open_statm() -> int | None:
    """/proc/self/statm, opened before the sandbox seals (it is read through this descriptor)."""
    try:
        return os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return None


def memory_bytes(statm: int | None) -> int:
    """This worker's address space now (what RLIMIT_AS bounds), else its peak resident size: the
    pool replaces a worker that has grown before a later compile fails for what earlier ones left."""
    if statm is not None:
        try:
            return int(os.pread(statm, 128, 0).split()[0]) * resource.getpagesize()
        except (OSError, ValueError, IndexError):
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def serve(conn: Connection, repo_dir: str, side: Side | tuple[Side, Side], roots: tuple[str, ...], imports: bool = False,
          triton_home: str | None = None, policy: Policy | None = None) -> None:
    """Worker process main loop: requests in, (kind, result, CPU seconds used) out, until told to
    stop. With a policy, nothing of the repository is handled before the worker is sealed."""
    die_with_parent()
    out_fd: int | None = None
    statm: int | None = None
    try:
        started = begin(policy) if policy is not None else None
        statm = open_statm()
        if triton_home:
            private_triton_home(triton_home)
            out_fd = captured.capture(triton_home)   # nothing a compiler prints reaches the terminal
        worker: Worker | RunWorker
        active = None
        if isinstance(side, tuple):  # an (old, new) pair: run and time both in one process
            from ptxdiff.dynamic.oracle import OracleWorker
            # replays, and synthesised launches; sealed (on the CPU) before torch and triton come in
            run = OracleWorker(repo_dir, side, roots, sealed=policy is not None and policy.seal)
            if policy is not None and policy.seal and started is not None:
                active = seal(policy, started, (), repository_reads(run.repo, list(zip(run.pair, run.indexes))))
            run.start()
            worker = run
        else:
            worker = Worker(repo_dir, side, roots, imports)
            if policy is not None and policy.seal and started is not None:
                active = seal(policy, started, tool_paths(), worker.reads())
    except SandboxError as e:
        conn.send((Outcome.SANDBOX, str(e)))
        return
    except BaseException as e:
        conn.send((Outcome.FATAL, f"worker could not start: {type(e).__name__}: {e}"))
        return
    conn.send((Outcome.READY, active.describe() if active else None, active.started.fallback() if active else None))
    mark = captured.since(out_fd, 0)[1] if out_fd is not None else 0
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        said = _answer(worker, request)
        text, mark = captured.since(out_fd, mark) if out_fd is not None else ("", mark)
        # a replay that faulted on the GPU may have broken its CUDA context: reporting all the CPU
        # spent makes the pool start a fresh worker for the next request
        conn.send((*_sent(said, text), math.inf if getattr(worker, "faulted", False) else cpu_seconds(),
                   memory_bytes(statm)))


def _answer(worker: Worker | RunWorker, request: Request) -> tuple[Outcome, Answer | str]:
    """The worker's answer to a request, or the error it raised."""
    try:
        return Outcome.OK, request.ask(worker)
    except SpecError as e:
        return Outcome.ERROR, str(e)
    except Exception as e:
        return Outcome.ERROR, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-4000:]}"


def _sent(said: tuple[Outcome, Answer | str], text: str) -> tuple[Outcome, Answer | str, bool]:
    """(outcome, the answer with what its request printed or the error, whether it ran out of
    memory): what the pool reads (`Pool._answered`)."""
    kind, body = said
    if isinstance(body, str):
        return kind, body, out_of_memory(body)
    answer = body.printing(text)
    return kind, answer, answer.out_of_memory


def call_sealed(conn: Connection, policy: Policy, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
    """A sealed worker that runs one function (pool.sandboxed_call): what the sandbox holds is
    what the compile workers get, with no repository."""
    die_with_parent()
    try:
        started = begin(policy)
        active = seal(policy, started, tool_paths())
    except SandboxError as e:
        conn.send((Outcome.SANDBOX, None, str(e)))
        return
    try:
        result = fn(*args)
    except Exception as e:
        result = f"{type(e).__name__}: {e}"
    conn.send((Outcome.OK, active.describe(), result))
