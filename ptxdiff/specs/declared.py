"""What a kernel declares, read from its source through the restricted evaluator (no import).

Parameters and which are constexprs, constexpr defaults, the `@triton.jit` options, the
`@triton.autotune` config list and the `@triton.heuristics` functions. Decorators of the
repository's own that pass `configs=` (wrappers around triton.autotune, e.g. a caching
autotuner) are read as autotune; any other foreign decorator (`@libentry()`) is named in the notes
and otherwise ignored, since it does not change the compiled code. Nothing here imports triton.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import cast

from ptxdiff.discovery.decorators import closure_reads, enclosing, locate, static_locals
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.spelling import FACTORY, WRAPS
from ptxdiff.evaluator.interp import Interp
from ptxdiff.evaluator.scope import Function, Scope
from ptxdiff.evaluator.values import Applied, Constexpr, External, Raised, Refused, TritonConfig
from ptxdiff.source.modules import ParsedModule, names_bound
from ptxdiff.source.syntax import call_args, is_constexpr, walk
from ptxdiff.specs.resolve import Autotuned, Declared, SpecError
from ptxdiff.targets import target_name

JIT = {"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit", "triton.language.jit"}
GLUON_JIT = {"triton.experimental.gluon.jit", "triton.experimental.gluon._runtime.jit",
             "triton.experimental.gluon.language.jit"}
AUTOTUNE = {"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"}
HEURISTICS = {"triton.heuristics", "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"}


class AbsentKernel(SpecError):
    """The module does not bind the kernel when compiling for this target (it defines it under an
    `if` on the device that this target answers false)."""


class TritonsOwn(SpecError):
    """The module binds the kernel's name to one of triton's own builtins under this triton
    (`triton_cast = tl.cast`, its `@triton.jit` definition under `else:` for older tritons):
    there is no code of the repository to compile."""

    def __init__(self, kernel: Kernel, dotted: str) -> None:
        super().__init__(f"{kernel.id} is triton's `{dotted}` under this triton (its @triton.jit definition "
                         "is for other tritons): nothing of the repository's to compile")
        self.dotted = dotted


class OtherBackend(SpecError):
    """The kernel's autotune configs pass another backend's compile options (`waves_per_eu`):
    triton's NVIDIA backend refuses them at the first launch (`Keyword argument waves_per_eu was
    specified but unrecognised`), so the kernel is written for that backend, not compiled here."""

    def __init__(self, backend: str, options: list[str]) -> None:
        super().__init__(f"its autotune configs pass {', '.join(options)}, {backend}'s compile "
                         f"option{'s' if len(options) > 1 else ''}, which triton refuses on NVIDIA at launch")
        self.backend = backend


# compile options of triton's AMD backend (HIPOptions) that its NVIDIA backend does not have
AMD_OPTIONS = frozenset({"waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint", "instruction_sched_variant",
                         "allow_flush_denorm", "wgp_cu_mode", "llvm_fn_attrs"})


def kernel_function(interp: Interp, kernel: Kernel) -> Function:
    """The kernel's function as the module binds it (the branch of an `if` the target takes); a
    kernel of a class or function body (`Ops.k`, `launch._k`) as that body defines it."""
    if kernel.unresolved:
        raise SpecError(kernel.unresolved)
    try:
        fn = _nested(interp, kernel) if "." in kernel.name else interp.env(kernel.path).resolve(kernel.name)
    except Raised as e:
        if e.type_name == "NameError" and repr(kernel.name) in str(e):
            raise AbsentKernel(f"{kernel.name} is not defined when compiling for {target_name(interp.device.cc)}: its module "
                               "defines it only for other targets") from None
        raise SpecError(f"cannot read {kernel.name}: {e}") from None
    except Refused as e:
        raise SpecError(f"cannot read {kernel.name}: {e}") from None
    if isinstance(fn, External) and fn.dotted.startswith("triton."):
        raise TritonsOwn(kernel, fn.dotted)
    if not isinstance(fn, Function) or not isinstance(fn.node, ast.FunctionDef):
        raise SpecError(f"{kernel.id} is not a function at this revision")
    return fn


def _nested(interp: Interp, kernel: Kernel) -> object:
    """A jit object bound in a class or function body, made from its statement: decorators are
    read in the module's scope where the outermost statement stands (the body never runs)."""
    env = interp.env(kernel.path)
    found = locate(env.mod, kernel.name)
    root = kernel.name.split(".")[0]
    tops = env.mod.bindings.get(root, ())
    if found is None or not tops:
        raise Raised("NameError", f"name {kernel.name!r} is not defined")
    stmt, flat = found
    scope = Scope(env, env.mod.position[id(tops[-1])], {}, is_module=True)
    if isinstance(stmt, ast.FunctionDef):
        local = closure_reads(env.mod, kernel.name, stmt)
        if local:
            name, host = local[0]
            raise SpecError(f"{kernel.path}:{stmt.lineno}: {kernel.name} reads `{name}`, a local of {host}(): triton "
                            "takes it from the closure when that function runs, which reading the source cannot "
                            "give (pass it as a parameter, or define it at module level)")
        return interp.function(stmt, _closure(interp, env.mod, kernel.name, stmt, scope))
    assert isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None  # locate() finds these
    value = stmt.value
    scope.vars.update({s.name: interp.function(s, scope) for s in flat if isinstance(s, ast.FunctionDef)})
    return interp.eval(value, scope)


def _closure(interp: Interp, mod: ParsedModule, qualname: str, fn: ast.FunctionDef, scope: Scope) -> Scope:
    """The scope a kernel defined inside functions is made in: each function's `static_locals`
    that the kernel reads (its imports of triton, the jit helpers beside it), bound as Python
    binds them; one the evaluator cannot take is left out (triton names it if the kernel needs it)."""
    reads = {n.id for n in walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for host in enclosing(mod, qualname):
        if isinstance(host, ast.FunctionDef):
            scope = Scope(scope.env, scope.before, {}, outer=scope)
            for stmt in static_locals(host):
                if reads & set(names_bound(stmt)) and stmt is not fn:
                    try:
                        interp.exec_stmt(stmt, scope)
                    except (Raised, Refused):
                        continue
    return scope


def decorator_kind(value: object) -> str | None:
    if isinstance(value, Applied):
        return decorator_kind(value.decorator)
    if isinstance(value, Function) and isinstance(value.node, ast.FunctionDef) and \
            value.env.interp.spelling.function_kind(value.env.mod, value.node.lineno) in (WRAPS, FACTORY):
        return "jit"   # the repository's own decorator around triton.jit (`def my_jit(fn): return triton.jit(fn)`)
    if isinstance(value, External):
        for kind, names in (("jit", JIT), ("gluon", GLUON_JIT), ("autotune", AUTOTUNE), ("heuristics", HEURISTICS)):
            if value.dotted in names:
                return kind
    return None


def _plain(value: object) -> object:
    """A constexpr value as specs and the compiler take it: constexpr(...) unwrapped."""
    return value.value if isinstance(value, Constexpr) else value


def read(interp: Interp, kernel: Kernel) -> Declared:
    fn = kernel_function(interp, kernel)
    node = fn.node
    assert isinstance(node, ast.FunctionDef)  # kernel_function made sure
    scope = fn.defining_scope()
    refused: dict[str, str] = {}
    notes: list[str] = []

    def evaluate(expr: ast.expr, what: str) -> object:
        try:
            return interp.eval(expr, scope)
        except (Refused, Raised) as e:
            refused[what] = f"{what}: {e}"
            return None

    autotune: tuple[Autotuned, ...] = ()
    heuristics: dict[str, Callable[[dict[str, object]], object]] = {}
    jit_options: dict[str, object] = {}
    for value, args, kwargs, label, ready in _decorators(node, fn.decorators):
        def get(x: object, what: str, ready: bool = ready) -> object:
            return x if ready else evaluate(x, what)  # type: ignore[arg-type]
        kind = decorator_kind(value)
        if kind is None and "configs" in kwargs:
            kind = "autotune"  # a wrapper of triton.autotune (it takes the same configs)
        if kind in ("jit", "gluon"):
            for name in ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug"):
                if name in kwargs:
                    v = get(kwargs[name], f"@jit {name}")
                    if v is not None:
                        jit_options[name] = v
        elif kind == "autotune":
            expr = kwargs.get("configs", args[0] if args else None)
            configs = get(expr, "autotune configs") if expr is not None else None
            if configs is not None:
                configs = _configs(configs, refused)
                autotune = configs or autotune
            if "prune_configs_by" in kwargs:
                notes.append("prune_configs_by is not applied offline: every config is compiled")
        elif kind == "heuristics":
            expr = kwargs.get("values", args[0] if args else None)
            values = get(expr, "heuristics") if expr is not None else None
            if isinstance(values, dict):
                for name, h in values.items():
                    heuristics[name] = _heuristic(interp, h)
            elif values is not None:
                refused["heuristics"] = "heuristics: not a dict of functions"
        elif label and label not in ("staticmethod", "classmethod"):
            notes.append(f"decorator @{label} ignored (it does not change the compiled code)")
    params = [a.arg for a in node.args.args]
    if amd := sorted({k for kwargs, *_ in autotune for k in kwargs if k in AMD_OPTIONS and k not in params}):
        raise OtherBackend("ROCm (AMD)", amd)
    constexpr = {a.arg for a in node.args.args if is_constexpr(a.annotation)}
    defaults: dict[str, object] = {}
    runtime_defaults: dict[str, object] = {}
    given = node.args.defaults
    for a, d in zip(node.args.args[len(params) - len(given):], given):
        value = evaluate(d, f"default of {a.arg}")
        if f"default of {a.arg}" in refused:
            continue
        if a.arg in constexpr:
            defaults[a.arg] = _plain(value)
        else:
            runtime_defaults[a.arg] = _plain(value)
    listed = cast("Iterable[str | int]", jit_options.get("do_not_specialize") or ())   # names or positions, as @jit takes them
    dns = frozenset(params[d] if isinstance(d, int) and d < len(params) else d for d in listed)
    return Declared(tuple(params), frozenset(constexpr), defaults, autotune, heuristics,
                    do_not_specialize=dns, runtime_defaults=runtime_defaults, refused=refused,
                    notes=tuple(notes), jit_options=jit_options)


def _decorators(node: ast.FunctionDef, values: tuple[object, ...]
                ) -> list[tuple[object, list[object], dict[str, object], str, bool]]:
    """Each decorator of a kernel: (value, arguments, keyword arguments, text, whether the
    arguments are values already). Those written above the `def` come with their expressions;
    those a call form applied (`k = triton.autotune(configs=...)(triton.jit(_k))`) after them, with
    the values the evaluator computed."""
    out: list[tuple[object, list[object], dict[str, object], str, bool]] = []
    for dec_node, value in zip(node.decorator_list, values):
        args, kwargs = call_args(dec_node)
        out.append((value, list(args), dict(kwargs), ast.unparse(dec_node), False))
    for value in values[len(node.decorator_list):]:
        if isinstance(value, Applied):
            out.append((value, list(value.args), dict(value.kwargs), "", True))
    return out


def _configs(value: object, refused: dict[str, str]) -> tuple[Autotuned, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, TritonConfig) for c in value):
        refused["autotune configs"] = "autotune configs: not a list of triton.Config"
        return ()
    return tuple(({k: _plain(v) for k, v in c.kwargs}, c.num_warps, c.num_stages, config_options(c)) for c in value)


def config_options(config: object) -> dict[str, object]:
    """The compile options a Config carries beyond warps and stages (`maxnreg`, `num_ctas`), where
    they differ from triton's defaults: each changes the compiled kernel."""
    options = {"num_ctas": getattr(config, "num_ctas", 1), "maxnreg": getattr(config, "maxnreg", None)}
    return {k: v for k, v in options.items() if v is not None and not (k == "num_ctas" and v == 1)}


def _heuristic(interp: Interp, h: object) -> Callable[..., object]:
    """A heuristic as specs calls it: f(args) -> value, with `args` a dict of known values."""
    if not isinstance(h, Function):
        return lambda args, h=h: _plain(h)

    def call(args: dict[str, object]) -> object:
        try:
            return _plain(interp.call(h, [args], {}))
        except Raised as e:
            if e.type_name == "KeyError":
                raise KeyError(e.message.strip("'\"")) from None
            raise SpecError(f"heuristic raised {e}") from None
        except Refused as e:
            raise SpecError(f"heuristic: {e}") from None
    return call

