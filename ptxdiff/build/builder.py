"""Triton kernel objects built from effective source: no module of the revision is imported.

A `@triton.jit` function comes in as source text: its `def` (decorators removed, defaults and
annotations replaced by values the evaluator computed) is compiled to a code object and wrapped
in a function object whose globals hold only what the kernel reads: other jit functions (built
the same way), module constants, triton's own modules and dtypes. Nothing is executed; triton's
code generator reads the source (through linecache) and those globals, exactly as it would for
an imported module. Names the evaluator refused stay out of the globals and are remembered, so
a compile error about such a name says why. Worker side: imports triton.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import linecache
import re
import types

from ptxdiff.build.evaluator.installed import from_triton, real_object
from ptxdiff.build.evaluator.interp import Interp
from ptxdiff.build.evaluator.scope import Function, Module, ModuleEnv, Scope
from ptxdiff.build.evaluator.values import Constexpr, DType, External, Raised, Refused
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.git.repo import printable
from ptxdiff.source.syntax import attribute_chains, call_args, is_constexpr
from ptxdiff.specs.declared import decorator_kind, kernel_function, read
from ptxdiff.specs.resolve import Declared, SpecError

CONSTEXPR_FUNCTIONS = {"triton.language.constexpr", "triton.language.core.constexpr", "triton.constexpr_function",
                       "triton.language.constexpr_function", "triton.language.core.constexpr_function"}


def _body_names(fn: ast.FunctionDef) -> set[str]:
    """Names a function body reads from its module (params and locals excluded)."""
    loads: set[str] = set()
    stores = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
    for stmt in fn.body:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name):
                (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
    return loads - stores


def _definition(fn: Function) -> ast.FunctionDef:
    """The `def` of a function the builder compiles (jit functions are never lambdas)."""
    assert isinstance(fn.node, ast.FunctionDef)
    return fn.node


class Builder:
    """Builds and remembers the JITFunctions of one revision for one target."""

    def __init__(self, interp: Interp, tag: str):
        self.interp, self.tag = interp, tag
        self._jit: dict[tuple, object] = {}
        self._building: set[tuple] = set()
        self._ns: dict[str, dict] = {}
        self._modules: dict[str, types.ModuleType] = {}
        self._module_values: dict[int, Module] = {}
        self.refused: dict[str, str] = {}

    def kernel(self, kernel: Kernel) -> tuple[object, Declared]:
        self.interp.used = []
        declared = read(self.interp, kernel)
        jit = self.jit(kernel_function(self.interp, kernel))
        if kernel.harness is not None:
            jit, declared = self._harness(kernel, kernel.harness, jit, declared)
        assumed = tuple(dict.fromkeys(self.interp.used))
        return jit, dataclasses.replace(declared, notes=declared.notes + assumed) if assumed else declared

    # -- values for triton's code generator --------------------------------------------------------
    def convert(self, value, name: str):
        """An evaluator value as a kernel global; None when it has no meaning inside a kernel."""
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (tuple, list)):
            items = [self.convert(v, name) for v in value]
            return type(value)(items)
        if isinstance(value, Constexpr):
            import triton.language as tl
            return tl.constexpr(self.convert(value.value, name))
        if isinstance(value, DType):
            import triton.language as tl
            return getattr(tl, value.name)
        if isinstance(value, External):
            if value.dotted.split(".")[0] in ("triton", "math"):
                try:
                    return real_object(value.dotted)
                except Raised:
                    return None
            return None
        if isinstance(value, Function):
            if any(decorator_kind(d) == "jit" for d in value.decorators):
                return self.jit(value)
            if any(isinstance(d, External) and d.dotted in CONSTEXPR_FUNCTIONS for d in value.decorators):
                return self._constexpr_function(value)
            return None
        if isinstance(value, Module):
            return self._module(value)
        return None

    def _harness(self, kernel: Kernel, outputs_count: int, device, declared: Declared) -> tuple[object, Declared]:
        """An elementwise kernel around a device function that is never launched itself (a
        repository decorator generates its kernels): each input loaded from its own pointer,
        the function applied, each output stored. The text is ptxdiff's own; the device function
        is the repository's, built from source like any other."""
        import triton

        constexprs = [p for p in declared.params if p in declared.constexpr_params]
        inputs = [p for p in declared.params if p not in declared.constexpr_params]
        outputs = [f"out{i}_ptr" for i in range(outputs_count)]
        params = [f"{p}_ptr" for p in inputs] + outputs + ["n_elements"] + \
            [f"{p}: tl.constexpr" for p in constexprs] + ["BLOCK: tl.constexpr"]
        call = f"_device({', '.join([*inputs, *(f'{c}={c}' for c in constexprs)])})"
        lines = [f"def {kernel.name}_harness({', '.join(params)}):",
                 "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
                 "    mask = offs < n_elements"]
        lines += [f"    {p} = tl.load({p}_ptr + offs, mask=mask)" for p in inputs]
        if outputs:
            lines.append(f"    result = {call}")
            values = ["result"] if len(outputs) == 1 else [f"result[{i}]" for i in range(len(outputs))]
            lines += [f"    tl.store({o} + offs, {v}, mask=mask)" for o, v in zip(outputs, values)]
        else:
            lines.append(f"    {call}")
        text = "\n".join(lines) + "\n"
        filename = f"<ptxdiff harness of {kernel.id}>"
        linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
        import triton.language as tl
        ns = {"tl": tl, "triton": triton, "_device": device, "__name__": f"ptxdiff_harness_{kernel.name}",
              "__builtins__": builtins}
        code = compile(text, filename, "exec", dont_inherit=True)
        fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType))
        pyfn = types.FunctionType(fcode, ns, fcode.co_name)
        pyfn.__annotations__ = dict.fromkeys([*constexprs, "BLOCK"], tl.constexpr)
        pyfn.__module__ = ns["__name__"]
        names = [p.split(":")[0] for p in params]
        harness = dataclasses.replace(declared, params=tuple(names), constexpr_params=frozenset([*constexprs, "BLOCK"]),
                          heuristics={}, autotune=(), runtime_defaults={},
                          notes=declared.notes + (f"compiled in an elementwise harness (a device function that "
                                                  f"{'a decorator of the repository turns into kernels'})",))
        return triton.jit(pyfn), harness

    def _constexpr_function(self, fn: Function):
        """`@tl.constexpr def f(dtype): ...` (or `@triton.constexpr_function`): host code that
        triton calls while compiling. It is interpreted by the evaluator, never executed: the
        kernel gets a callable that runs the evaluator on triton's arguments."""
        import triton.language as tl

        plain = dataclasses.replace(fn, decorators=())
        interp, convert = self.interp, self.convert

        def call(*args, **kwargs):
            try:
                result = interp.call_function(plain, [from_triton(a) for a in args],
                                              {k: from_triton(v) for k, v in kwargs.items()})
            except (Refused, Raised) as e:
                raise RuntimeError(f"{fn.name}: {e}") from None
            return convert(result, fn.name)
        call.__name__ = call.__qualname__ = fn.name
        if any(isinstance(d, External) and d.dotted.endswith("constexpr_function") for d in fn.decorators):
            import triton
            return triton.constexpr_function(call) if hasattr(triton, "constexpr_function") else tl.constexpr(call)
        return tl.constexpr(call)

    def _module(self, value: Module) -> types.ModuleType:
        """A repository module used as `alias.helper` inside a kernel: a plain module object that
        holds the attributes kernels read from it (filled in as they are found)."""
        key = value.env.mod.path
        if key not in self._modules:
            module = types.ModuleType(value.env.mod.name)
            self._modules[key] = module
            self._module_values[id(module)] = value
        return self._modules[key]

    def _fill_module(self, module: types.ModuleType, rest: list[str]) -> None:
        """Put on `module` what a kernel reads through it (`alias.helper`, `alias.sub.X`)."""
        value = self._module_values[id(module)]
        if not rest:
            return
        name = rest[0]
        if not hasattr(module, name):
            try:
                attr = self.interp.attribute_of_module(value, name)
            except (Refused, Raised) as e:
                self.refused[name] = str(e)
                return
            converted = self.convert(attr, name)
            if converted is None:
                return
            setattr(module, name, converted)
        sub = getattr(module, name)
        if isinstance(sub, types.ModuleType) and id(sub) in self._module_values:
            self._fill_module(sub, rest[1:])

    def namespace(self, env: ModuleEnv) -> dict:
        path = env.mod.path
        if path not in self._ns:
            self._ns[path] = {"__name__": env.mod.name, "__builtins__": builtins, "__file__": self.filename(path)}
        return self._ns[path]

    def filename(self, path: str) -> str:
        """Source name for triton's locations: UTF-8 whatever the path's bytes."""
        return f"{printable(path)}@{self.tag}"

    # -- functions ---------------------------------------------------------------------------------
    def jit(self, fn: Function):
        node = _definition(fn)
        key = (fn.env.mod.path, node.name, node.lineno)
        if key in self._jit:
            return self._jit[key]
        if key in self._building:
            raise SpecError(f"{node.name} calls itself through other jit functions")
        self._building.add(key)
        try:
            ns = self.namespace(fn.env)
            for name in sorted(_body_names(node)):
                if name in ns:
                    continue
                try:
                    value = fn.env.resolve(name)
                except Raised:
                    continue  # not defined: triton says so if the kernel really reaches it
                except Refused as e:
                    self.refused[name] = str(e)
                    continue
                converted = self.convert(value, name)
                if converted is not None:
                    ns[name] = converted
            for chain in (c for stmt in node.body for c in attribute_chains(stmt)):
                module = ns.get(chain[0])
                if isinstance(module, types.ModuleType) and id(module) in self._module_values:
                    self._fill_module(module, chain[1:])
            pyfn = self._function(fn, ns)
            import triton
            options = self._jit_options(fn)
            self._jit[key] = triton.jit(pyfn, **options)
            return self._jit[key]
        finally:
            self._building.discard(key)

    def _jit_options(self, fn: Function) -> dict:
        for dec_node, value in zip(_definition(fn).decorator_list, fn.decorators):
            if decorator_kind(value) != "jit":
                continue
            _, kwargs = call_args(dec_node)
            options = {}
            for name in ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug"):
                if name in kwargs:
                    try:
                        options[name] = self.interp.eval(kwargs[name], Scope(fn.env, fn.before, outer=fn.outer))
                    except (Refused, Raised) as e:
                        raise SpecError(f"@jit {name}: {e}") from None
            return options
        return {}

    def _function(self, fn: Function, ns: dict) -> types.FunctionType:
        """The function object of a `def`, made without executing the `def` statement: defaults
        and annotations come from the evaluator, the body is compiled but never run."""
        import triton.language as tl

        definition = _definition(fn)
        node = copy.deepcopy(definition)
        node.decorator_list = []
        node.returns = None
        annotations = {}
        for a in [*node.args.args, *node.args.kwonlyargs]:
            if is_constexpr(a.annotation):
                annotations[a.arg] = tl.constexpr
            elif isinstance(a.annotation, ast.Constant) and isinstance(a.annotation.value, str):
                annotations[a.arg] = a.annotation.value
            a.annotation = None
        defaults = []
        for d in definition.args.defaults:
            try:
                defaults.append(self.convert(self.interp.eval(d, _scope(fn)), "default"))
            except (Refused, Raised):
                defaults.append(None)  # the spec gives every constexpr's value; declared.py says why
        node.args.defaults = [ast.copy_location(ast.Constant(None), d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else ast.copy_location(ast.Constant(None), d)
                                 for d in node.args.kw_defaults]
        filename = self.filename(fn.env.mod.path)
        self._register_source(fn.env, filename)
        self._placeholder_defaults(fn, filename, defaults, ns)
        module = ast.Module(body=[node], type_ignores=[])
        code = compile(module, filename, "exec", dont_inherit=True)
        fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
        pyfn = types.FunctionType(fcode, ns, node.name)
        pyfn.__defaults__ = tuple(defaults) or None
        pyfn.__annotations__ = annotations
        pyfn.__module__ = ns["__name__"]
        pyfn.__qualname__ = node.name
        return pyfn

    def _placeholder_defaults(self, fn: Function, filename: str, values: list, ns: dict) -> None:
        """Triton's code generator evaluates default expressions from the source text: each one
        that is not a literal is replaced there by a name bound to the value the evaluator
        computed (None where it refused), so no default expression is ever evaluated for real."""
        import triton.language as tl

        entry: tuple = linecache.cache[filename]
        lines = entry[2]
        node = _definition(fn)
        params = node.args.args[len(node.args.args) - len(node.args.defaults):]
        for arg, expr, value in reversed(list(zip(params, node.args.defaults, values))):
            if isinstance(expr, ast.Constant) or expr.end_lineno is None:
                continue
            name = f"_ptxdiff_default_{arg.arg}"
            ns[name] = value if isinstance(value, tl.constexpr) else tl.constexpr(value)
            first, last = expr.lineno - 1, expr.end_lineno - 1
            head = lines[first].encode()[:expr.col_offset].decode(errors="replace")
            tail = lines[last].encode()[expr.end_col_offset:].decode(errors="replace")
            if first == last:
                lines[first] = head + name + tail
            else:
                lines[first] = head + name + "\n"
                for i in range(first + 1, last):
                    lines[i] = "\n"
                lines[last] = " " * expr.end_col_offset + tail

    def _register_source(self, env: ModuleEnv, filename: str) -> None:
        if filename in linecache.cache:
            return
        text = self.interp.index.text(env.mod.path)
        lines = text.splitlines(keepends=True)
        linecache.cache[filename] = (len(text), None, lines, filename)

    def explain(self, error: str) -> str:
        """A compile error about a name the evaluator refused gets the refusal appended."""
        for name, why in self.refused.items():
            if re.search(rf"\b{re.escape(name)}\b", error):
                return f"{error} ({name}: {why})"
        return error


def _scope(fn: Function) -> Scope:
    return Scope(fn.env, fn.before, outer=fn.outer)
