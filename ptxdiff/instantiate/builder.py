"""Triton kernel objects built from effective source: no module of the revision is imported.

A `@triton.jit` function comes in as source text: its `def` (decorators removed, defaults and
annotations replaced by values the evaluator computed) is compiled to a code object and wrapped
in a function object whose globals hold only what the kernel reads: other jit functions (built
the same way), module constants, stand-ins for triton's modules (namespace.py) and dtypes, and
no builtins. Nothing is executed; triton's code generator reads the source (through linecache)
and those globals, exactly as it would for an imported module. Before that, the text is read for
what could reach Python internals (scan.py), and after, the function triton will parse is checked
to be the one built. Names the evaluator refused stay out of the globals and are remembered, so
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
from typing import Any, cast

from ptxdiff.discovery.fingerprint import Closure, kernel_closure
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.spelling import GLUON, JIT
from ptxdiff.evaluator.host import CONSTEXPR_FUNCTIONS
from ptxdiff.evaluator.installed import is_gluon_layout
from ptxdiff.evaluator.interp import Interp
from ptxdiff.evaluator.scope import Function, Module, ModuleEnv
from ptxdiff.evaluator.values import Applied, Class, Constexpr, DType, EnumMember, External, Raised, Refused
from ptxdiff.git.values import printable
from ptxdiff.instantiate import aggregates, enums, host_calls, namespace, own_errors
from ptxdiff.instantiate.harness import elementwise_harness
from ptxdiff.instantiate.scan import BUILTIN_DECORATORS, body_chains, body_names, describe, first_use, refusal
from ptxdiff.source.syntax import (
    call_args,
    dotted_name,
    is_constexpr,
    python_lines,
    signature_annotation,
    strip_docstrings,
    walk,
)
from ptxdiff.specs.declared import decorator_kind, kernel_function, read
from ptxdiff.specs.resolve import Declared, SpecError

NOT_THE_TEXT = "the source triton would compile is not the kernel's text"
# a name the kernel's module binds nowhere (no assignment, def, import or star import): triton
# raises the same NameError on this revision, on any machine
UNBOUND = "bound nowhere in {path}: the kernel's own error, which triton raises at this revision too"
NOT_FINGERPRINTED = "the source built is not the source its fingerprint names"
_REFUSED = object()  # a value that must not reach a kernel (convert records why)


def _definition(fn: Function) -> ast.FunctionDef:
    """The `def` of a function the builder compiles (jit functions are never lambdas)."""
    assert isinstance(fn.node, ast.FunctionDef)
    return fn.node


class Builder:
    """Builds and remembers the JITFunctions of one revision for one target."""

    def __init__(self, interp: Interp, tag: str):
        self.interp, self.tag = interp, tag
        self._jit: dict[tuple[str, str, int], object] = {}   # (path, name, line) of a `def` -> its JITFunction
        self._building: set[tuple[str, str, int]] = set()
        self._ns: dict[str, dict[str, Any]] = {}
        self._modules: dict[str, types.ModuleType] = {}
        self._classes: dict[int, types.ModuleType] = {}
        self._aggregates: dict[int, Any] = {}   # a repository `@aggregate` class -> triton's type of it
        self._enums: dict[int, Any] = {}        # a repository class -> the real enum it is, or None
        self._class_values: dict[int, Class] = {}
        self._module_values: dict[int, Module] = {}
        self.refused: dict[str, str] = {}
        self.unbound: set[tuple[str, str]] = set()   # (path, name) a jit function reads, its module binds nowhere
        self._denied_names: frozenset[str] | None = None
        self._language_helpers: frozenset[str] | None = None
        self._closure: Closure | None = None
        self._held: dict[str, frozenset[int]] = {}
        self._assumed: dict[tuple[str, str], tuple[str, ...]] = {}   # (module, global): assumptions behind it

    def kernel(self, kernel: Kernel) -> tuple[object, Declared]:
        self.interp.used = []
        declared = read(self.interp, kernel)
        fn = kernel_function(self.interp, kernel)
        self._closure, self._held = self._fingerprinted(kernel), {}
        jit = self.jit(fn)
        if kernel.harness is not None:
            jit, declared = elementwise_harness(kernel, kernel.harness, jit, declared)
        assumed = tuple(dict.fromkeys(self.interp.used))
        return jit, dataclasses.replace(declared, notes=declared.notes + assumed) if assumed else declared

    def _fingerprinted(self, kernel: Kernel) -> Closure:
        """The kernel's closure as discovery walks it (one resolver): its fingerprint must be the
        one the kernel came with (the cache key's), and every jit function built must be in it."""
        closure = kernel_closure(self.interp.index, self.interp.index.parse(kernel.path), kernel.name)
        if closure.ambiguities:
            raise SpecError(f"{kernel.path}: {kernel.name}: {sorted(closure.ambiguities)[0]}")
        if closure.fingerprint() != kernel.fingerprint:
            raise SpecError(f"{kernel.path}: {kernel.name}: {NOT_FINGERPRINTED}")
        return closure

    def _in_closure(self, fn: Function) -> bool:
        """Whether a function's `def` is inside one of the closure's statements of its module."""
        if self._closure is None:
            return True
        path = fn.env.mod.path
        if path not in self._held:
            tree = self.interp.index.parse(path).tree
            body = tree.body if tree is not None else []
            self._held[path] = frozenset(id(node) for i in self._closure.statements.get(path, ())
                                         for node in walk(body[i]))
        return id(fn.node) in self._held[path]

    # -- values for triton's code generator --------------------------------------------------------
    def convert(self, value: Any, name: str) -> Any:
        """An evaluator value as a kernel global; None when it has no meaning inside a kernel, or
        must not reach one (then `refused` says why)."""
        converted = self._convert(value, name)
        return None if converted is _REFUSED else converted

    def _convert(self, value: Any, name: str) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (tuple, list)):
            items = [self._convert(v, name) for v in value]
            return _REFUSED if any(i is _REFUSED for i in items) else type(value)(items)
        if isinstance(value, Constexpr):
            import triton.language as tl
            inner = self._convert(value.value, name)
            return inner if inner is _REFUSED else tl.constexpr(inner)
        if isinstance(value, DType):
            import triton.language as tl
            return getattr(tl, value.name)
        if isinstance(value, External):
            return self._external(value, name)
        if isinstance(value, Function):
            if any(decorator_kind(d) in ("jit", "gluon") for d in value.decorators) \
                    or isinstance(value.node, ast.FunctionDef) \
                    and self.interp.spelling.decorator_kinds(value.env.mod, value.node) & {JIT, GLUON}:
                return self.jit(value)   # a jit function as discovery reads it (one resolver), however spelled
            if any(isinstance(d, External) and d.dotted in CONSTEXPR_FUNCTIONS for d in value.decorators):
                return host_calls.constexpr_function(self.interp, value, self.convert)
            if any(isinstance(d, External) and d.dotted in BUILTIN_DECORATORS for d in value.decorators):
                self.refused.setdefault(name, f"a triton builtin of the repository ({value.env.mod.path}): Python "
                                              "that triton runs while it compiles, which ptxdiff builds from source "
                                              "and never runs (`--import` runs the revision's modules)")
            elif not value.decorators and isinstance(value.node, ast.FunctionDef) and namespace.reading_as_triton2():
                return host_calls.plain_function(self.interp, value, self.convert)
            elif value.decorators:   # `@_extra_module.dispatch`: what it makes is known only by running it
                self.refused.setdefault(name, f"made by a decorator of the repository ({value.env.mod.path}) that is "
                                              "no triton decorator: what it returns (often a triton builtin, Python "
                                              "that triton runs while it compiles) is known only by running it")
            return None
        if is_gluon_layout(value):   # built by a constexpr function the evaluator ran: triton's own value
            return value
        if isinstance(value, Module):
            return self._module(value)
        if isinstance(value, Class):
            if aggregates.is_aggregate(value):
                return self._aggregate(value, name)
            if id(value) not in self._enums:   # an enum of plain values: a real enum of them (enums.py)
                self._enums[id(value)] = enums.real_enum(value)
            return self._enums[id(value)] or self._class(value)
        if isinstance(value, EnumMember) and value.mixed:   # `Mode.fast` of `class Mode(str, Enum)`: "fast"
            return self._convert(value.value, name)
        return None

    def _aggregate(self, value: Class, name: str) -> Any:
        """A repository's `@aggregate` class: triton's own value type (aggregates.py)."""
        key = id(value)
        if key not in self._aggregates:
            from triton.language import core

            made = aggregates.build(value, _module_name(value.module), self.convert, core._aggregate,
                                    lambda expr, fn: self.interp.eval(expr, fn.defining_scope()))
            if isinstance(made, str):
                self.refused[name] = f"the aggregate {value.name}: {made}"
                return _REFUSED
            self._aggregates[key], fill = made
            fill()
        return self._aggregates[key]

    def _class(self, value: Class) -> types.ModuleType:
        """A class of the repository whose jit functions a kernel calls (`Ops._helper(x)`, static
        methods of a class of kernels): a plain object that holds the members kernels read from it
        (filled in as they are found, like a module's)."""
        key = id(value)
        if key not in self._classes:
            holder = types.ModuleType(f"class {value.name} (repository)")
            self._classes[key] = holder
            self._class_values[id(holder)] = value
        return self._classes[key]

    def _external(self, value: External, name: str) -> Any:
        """A name of triton, math or torch, read through the stand-ins: a language builtin, dtype,
        class, constant or a stand-in module (torch's: dtype limits only); never an object reached
        by walking a real module (`tl.core.builtins.exec` is refused). None for a name this triton
        does not have (triton says so if the kernel reaches it) and for other packages' names."""
        parts = value.dotted.split(".")
        if parts[0] not in ("triton", "math", "torch"):
            return None
        found, obj = namespace.lookup(value.dotted)
        if found:
            return obj
        if namespace.withheld(namespace.root(parts[0]), parts[1:]) is None:
            return None
        self.refused[name] = f"`{value.dotted}` {namespace.WITHHELD}"
        return _REFUSED

    def _module(self, value: Module) -> types.ModuleType:
        """A repository module used as `alias.helper` inside a kernel: a plain module object that
        holds the attributes kernels read from it (filled in as they are found)."""
        key = value.env.mod.path
        if key not in self._modules:
            module = types.ModuleType(_module_name(value.env.mod.name))
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
        elif isinstance(sub, types.ModuleType) and id(sub) in self._class_values and rest[1:]:
            self._fill_class(sub, rest[1])   # `language.Linear.forward(...)`

    def _fill_class(self, holder: types.ModuleType, name: str) -> None:
        """Put on a class's stand-in the member a kernel reads through it (`Ops._helper`)."""
        if not hasattr(holder, name):
            member = self._convert(self._class_values[id(holder)].namespace.get(name), name)
            if member is not None and member is not _REFUSED:
                setattr(holder, name, member)

    def namespace(self, env: ModuleEnv) -> dict[str, Any]:
        """A module's globals as its kernels see them. `__builtins__` is empty: triton's code
        generator has its own (range, min, len, getattr...), and a function object made on globals
        without the key would get the real ones."""
        path = env.mod.path
        if path not in self._ns:
            self._ns[path] = {"__name__": _module_name(env.mod.name), "__builtins__": {},
                              "__file__": self.filename(path), **namespace.constexpr_annotations(env.mod.tree)}
        return self._ns[path]

    def filename(self, path: str) -> str:
        """Source name for triton's locations: UTF-8 whatever the path's bytes."""
        return f"{printable(path)}@{self.tag}"

    # -- functions ---------------------------------------------------------------------------------
    def jit(self, fn: Function) -> Any:
        node = _definition(fn)
        if not self._in_closure(fn):
            raise SpecError(f"{fn.env.mod.path}:{node.lineno}: {node.name}: {NOT_FINGERPRINTED} (the builder "
                            f"resolved a jit function outside the kernel's closure)")
        key = (fn.env.mod.path, node.name, node.lineno)
        if key in self._jit:
            return self._jit[key]
        if key in self._building:
            raise SpecError(f"{node.name} calls itself through other jit functions")
        reads, chains = body_names(node), body_chains(node)
        found = refusal(node, self._denied(), self._repository_modules(fn, reads, chains), self._helpers())
        if found is not None:
            raise SpecError(describe(fn.env.mod.path, *found))
        self._building.add(key)
        try:
            ns = self.namespace(fn.env)
            for name in sorted(reads):
                if name in ns:   # built for another kernel of the module: its assumptions are this one's too
                    self.interp.used.extend(self._assumed.get((fn.env.mod.path, name), ()))
                    continue
                start = len(self.interp.used)
                try:
                    value = _global_or_closure(fn, name)
                except Raised:   # not defined: triton says so if the kernel really reaches it
                    if fn.outer is None and not hasattr(builtins, name) \
                            and self.interp.index.binds_nowhere(fn.env.mod.path, name):
                        self.unbound.add((fn.env.mod.path, name))
                    continue
                except Refused as e:
                    self.refused[name] = str(e)
                    continue
                self._assumed[(fn.env.mod.path, name)] = tuple(self.interp.used[start:])
                converted = self._convert(value, name)
                if converted is _REFUSED:
                    raise SpecError(describe(fn.env.mod.path, first_use(node, name), self.refused[name]))
                held = converted if converted is not None else own_errors.held(name, value)
                if held is not None:   # a value triton 3.x refuses is held by a stand-in it refuses alike
                    ns[name] = held
            for chain, sub in chains:
                module = ns.get(chain[0])
                if isinstance(module, types.ModuleType) and id(module) in self._module_values:
                    self._fill_module(module, chain[1:])
                if isinstance(module, types.ModuleType) and id(module) in self._class_values:
                    self._fill_class(module, chain[1])
                if (dotted := namespace.withheld(module, chain[1:])) is not None:
                    raise SpecError(describe(fn.env.mod.path, sub, f"`{dotted}` {namespace.WITHHELD}"))
                if len(chain) >= 2 and (note := namespace.renamed_note(chain, module)) and note not in self.interp.used:
                    self.interp.used.append(note)
            pyfn, expected = self._function(fn, ns)
            jit = self._jit_of(fn)(pyfn, **self._jit_options(fn))
            _check_source(jit, expected, fn.env.mod.path)
            self._jit[key] = jit
            return jit
        finally:
            self._building.discard(key)

    @staticmethod
    def _repository_modules(fn: Function, reads: set[str],
                            chains: list[tuple[list[str], ast.Attribute]]) -> frozenset[str]:
        """The global names the body reads (`reads`) a private attribute of (`mx_kernels._helper`,
        `Ops._helper`) that are repository modules or classes: their stand-ins (`_module`, `_class`)
        hold only what a kernel reads."""
        out: set[str] = set()
        for chain, _ in chains:
            if len(chain) < 2 or chain[0] not in reads or not chain[1].startswith("_") or chain[1].startswith("__"):
                continue
            try:
                if isinstance(fn.env.resolve(chain[0]), (Module, Class)):
                    out.add(chain[0])
            except (Raised, Refused):
                continue
        return frozenset(out)

    def _helpers(self) -> frozenset[str]:
        if self._language_helpers is None:
            self._language_helpers = namespace.language_helpers()
        return self._language_helpers

    def _denied(self) -> frozenset[str]:
        if self._denied_names is None:
            self._denied_names = namespace.jit_internals()
        return self._denied_names

    def _jit_of(self, fn: Function) -> Any:
        """`triton.jit`, or Gluon's `jit` for a function Gluon's decorator made (its kernels compile
        with Gluon's front end: explicit layouts, shared memory, async copies)."""
        import triton

        node = _definition(fn)
        if any(decorator_kind(d) == "gluon" for d in fn.decorators) \
                or GLUON in self.interp.spelling.decorator_kinds(fn.env.mod, node):
            try:
                from triton.experimental import gluon
            except ImportError:
                raise SpecError(f"{fn.env.mod.path}: {node.name}: a Gluon kernel, and triton "
                                f"{triton.__version__} has no Gluon (3.4 and later have it)") from None
            return gluon.jit
        return triton.jit

    def _jit_options(self, fn: Function) -> dict[str, object]:
        names = ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug")
        for value in fn.decorators[len(_definition(fn).decorator_list):]:
            if isinstance(value, Applied) and value.decorator.dotted == "triton.jit":   # `triton.jit(_k, debug=True)`
                return {k: v for k, v in value.kwargs if k in names}
        for dec_node, value in zip(_definition(fn).decorator_list, fn.decorators):
            if decorator_kind(value) not in ("jit", "gluon"):
                continue
            _, kwargs = call_args(dec_node)
            options: dict[str, object] = {}
            for name in ("do_not_specialize", "do_not_specialize_on_alignment", "noinline", "debug"):
                if name in kwargs:
                    try:
                        options[name] = self.interp.eval(kwargs[name], fn.defining_scope())
                    except (Refused, Raised) as e:
                        raise SpecError(f"@jit {name}: {e}") from None
            return options
        return {}

    def _function(self, fn: Function, ns: dict[str, Any]) -> tuple[types.FunctionType, ast.FunctionDef]:
        """The function object of a `def`, made without executing the `def` statement: defaults
        and annotations come from the evaluator, the body is compiled but never run. Also the
        `def` as triton will parse it from the registered text (placeholders in)."""
        import triton.language as tl

        definition = _definition(fn)
        node = copy.deepcopy(definition)
        node.decorator_list = []
        node.returns = None
        annotations = {}
        for a in [*node.args.args, *node.args.kwonlyargs]:
            if is_constexpr(a.annotation):
                annotations[a.arg] = tl.constexpr
            elif (typed := signature_annotation(a.annotation)) is not None:
                annotations[a.arg] = typed   # `"*fp16"`, or what triton reads from `tl.pointer_type(tl.int64)`
            a.annotation = None
        defaults = [self._default(fn, d) for d in definition.args.defaults]
        node.args.defaults = [ast.copy_location(ast.Constant(None), d) for d in node.args.defaults]
        node.args.kw_defaults = [None if d is None else ast.copy_location(ast.Constant(None), d)
                                 for d in node.args.kw_defaults]
        filename = self.filename(fn.env.mod.path)
        self._register_source(fn.env, filename)
        expected = self._placeholders(fn, filename, defaults, ns)
        module = ast.Module(body=[node], type_ignores=[])
        code = compile(module, filename, "exec", dont_inherit=True)
        fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == node.name)
        pyfn = types.FunctionType(fcode, ns, node.name)
        pyfn.__defaults__ = tuple(defaults) or None
        pyfn.__annotations__ = annotations
        pyfn.__module__ = ns["__name__"]
        pyfn.__qualname__ = node.name
        return pyfn, expected

    def _default(self, fn: Function, expr: ast.expr) -> Any:
        try:
            return self.convert(self.interp.eval(expr, fn.defining_scope()), "default")
        except (Refused, Raised):
            return None  # the spec gives every constexpr's value; declared.py says why

    def _placeholders(self, fn: Function, filename: str, defaults: list[object], ns: dict[str, Any]) -> ast.FunctionDef:
        """Triton's code generator evaluates default expressions and annotations from the source
        text: each one that is not a literal is replaced there by a name bound to the value the
        builder computed (a default: the evaluator's value, None where it refused; an annotation:
        `tl.constexpr` or nothing), so none is ever evaluated for real. An annotation other than a
        constant, a name or a dotted name is refused. Returns the `def` as the text now reads."""
        import triton.language as tl

        path = fn.env.mod.path
        expected = copy.deepcopy(_definition(fn))
        expected.decorator_list = []
        spans: list[tuple[ast.expr, str]] = []
        for slot, value in _slots(expected, defaults):
            expr = slot.get()
            if isinstance(expr, ast.Constant):
                continue
            if slot.kind == "return":
                value = None   # triton never reads a return annotation (`-> tuple[tl.tensor, tl.tensor]`)
            elif slot.kind == "annotation":
                if not _plain_annotation(expr):
                    raise SpecError(describe(path, expr, "an annotation must be a constant, a name, a dotted "
                                                         "name or `tl.constexpr(<one of those>)` (triton's code "
                                                         "generator evaluates it)"))
                value = tl.constexpr if is_constexpr(expr) else None
            elif value is _UNSET:
                value = self._default(fn, expr)
            name = f"_ptxdiff_{expected.name}_{slot.kind}_{slot.arg}"
            ns[name] = value if isinstance(value, tl.constexpr) or value is tl.constexpr else tl.constexpr(value)
            spans.append((expr, name))
            slot.set(ast.Name(id=name, ctx=ast.Load()))
        entry = cast("tuple[int, float | None, list[str], str]", linecache.cache[filename])   # registered above
        _replace(entry[2], spans)
        return expected

    def _register_source(self, env: ModuleEnv, filename: str) -> None:
        if filename in linecache.cache:
            return
        text = self.interp.index.text(env.mod.path)
        linecache.cache[filename] = (len(text), None, python_lines(text), filename)

    def explain(self, error: str, paths: frozenset[str] = frozenset()) -> str:
        """A compile error about a name the evaluator refused gets the refusal appended; triton's
        NameError of a name a module of the kernel (`paths`: its closure's) binds nowhere, and the
        errors of own_errors.py, say they are the kernel's own."""
        for name, why in self.refused.items():
            if re.search(rf"\b{re.escape(name)}\b", error):
                return f"{error} ({name}: {why})"
        for path, name in sorted(self.unbound):   # of this kernel's own modules, whatever was built before
            if path in paths and re.search(rf"NameError: {re.escape(name)} is not defined", error):
                return f"{error} ({name}: {UNBOUND.format(path=path)})"
        return own_errors.explain(error, self.interp.index) or error


def _global_or_closure(fn: Function, name: str) -> object:
    """A name a kernel reads, as Python finds it when the kernel runs: a module global as the whole
    module binds it (a helper defined below the kernel), else from the functions the kernel is
    defined in (their imports and defs)."""
    try:
        return fn.env.resolve(name)
    except Raised:
        if fn.outer is None:
            raise
        return fn.defining_scope().lookup(name)


_UNSET = object()  # a default the evaluator has not computed yet (keyword-only ones)


def _plain_annotation(expr: ast.expr) -> bool:
    """A constant, a name, a dotted name, `tl.constexpr(tl.int1)` (a constexpr with a type given in the call
    form) or `tl.pointer_type(tl.int64)`: nothing that runs code, whatever the names are bound to."""
    if isinstance(expr, ast.Call):
        return signature_annotation(expr) is not None or not isinstance(expr.func, ast.Call) and \
            _plain_annotation(expr.func) and is_constexpr(expr.func) and not expr.keywords and \
            all(_plain_annotation(a) for a in expr.args)
    return isinstance(expr, (ast.Name, ast.Constant)) or isinstance(expr, ast.Attribute) and bool(dotted_name(expr))


@dataclasses.dataclass
class _Slot:
    """One place of a `def` that triton evaluates from the text: a default or an annotation."""

    kind: str  # "default", "kwdefault", "annotation", "return"
    arg: str
    owner: object
    field: str
    index: int | None = None

    def get(self) -> ast.expr:
        value = getattr(self.owner, self.field)
        expr: ast.expr = value if self.index is None else value[self.index]
        return expr

    def set(self, expr: ast.expr) -> None:
        if self.index is None:
            setattr(self.owner, self.field, expr)
        else:
            getattr(self.owner, self.field)[self.index] = expr


def _slots(node: ast.FunctionDef, defaults: list[object]) -> list[tuple[_Slot, object]]:
    """Every default and annotation of a `def` (with the evaluator's value of each positional
    default), the last in the text first: replacing text from the end keeps earlier columns."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    slots: list[tuple[_Slot, object]] = []
    for i, (arg, value) in enumerate(zip(positional[len(positional) - len(args.defaults):], defaults)):
        slots.append((_Slot("default", arg.arg, args, "defaults", i), value))
    for i, (arg, expr) in enumerate(zip(args.kwonlyargs, args.kw_defaults)):
        if expr is not None:
            slots.append((_Slot("kwdefault", arg.arg, args, "kw_defaults", i), _UNSET))
    for param in [*positional, args.vararg, *args.kwonlyargs, args.kwarg]:
        if param is not None and param.annotation is not None:
            slots.append((_Slot("annotation", param.arg, param, "annotation"), None))
    if node.returns is not None:
        slots.append((_Slot("return", "", node, "returns"), None))
    return sorted(slots, key=lambda s: (s[0].get().lineno, s[0].get().col_offset), reverse=True)


def _replace(lines: list[str], spans: list[tuple[ast.expr, str]]) -> None:
    """Put each name in place of its expression's text (spans come last first). Another target's
    builder of the same revision shares the registered text: when the first span already reads
    its name (the text left of it never moves), the function's text was done."""
    if spans:
        expr, name = spans[-1]
        if lines[expr.lineno - 1].encode()[expr.col_offset:].startswith(name.encode()):
            return
    for expr, name in spans:
        if expr.end_lineno is None or expr.end_col_offset is None:
            continue
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


def _unindent_strings(tree: ast.AST) -> None:
    """Multi-line strings with each line's indentation dropped: triton dedents a nested
    function's text, and with it the inside of its strings (an inline asm block)."""
    for node in walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "\n" in node.value:
            node.value = "\n".join(line.lstrip() for line in node.value.split("\n"))


def _check_source(jit: Any, expected: ast.FunctionDef, path: str) -> None:
    """The function triton will parse (`jit.src`, re-read from the registered text) must be the
    `def` the builder compiled, placeholders in: otherwise triton would compile other text than
    the kernel's (lines split differently: a decoy function above it)."""
    try:
        tree: ast.Module | None = ast.parse(getattr(jit, "src", ""))
    except (SyntaxError, ValueError):
        tree = None
    same = tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef)
    if tree is not None and same:
        built = ast.Module(body=[copy.deepcopy(expected)], type_ignores=[])
        for module in (tree, built):
            strip_docstrings(module)   # docstrings are not code (the module index may have dropped them)
            _unindent_strings(module)
        same = ast.dump(tree.body[0]) == ast.dump(built.body[0])
    if not same:
        raise SpecError(f"{path}:{expected.lineno}: {expected.name}: {NOT_THE_TEXT}")


def _module_name(name: str) -> str:
    """A repository module's name as kernels see it: never one triton's code generator would swap
    for one of its real modules (a repository file at triton/language/extra/libdevice.py)."""
    return f"{name} (repository)" if namespace.reserved(name) else name
