"""A restricted evaluator: the values a kernel needs from its repository, computed from source text.

Module constants, `tl.constexpr(...)` values, autotune config lists, heuristics and the small
host functions they call are *interpreted* here, statement by statement, never executed by
Python: nothing of the repository is imported or run. What the evaluator knows is closed and
listed below (literals, arithmetic, comparisons, containers, comprehensions, plain functions and
classes of the repository, triton dtypes, `triton.Config`, `triton.cdiv`, `next_power_of_2`,
`math`, `itertools`, version parsing); everything else is refused with the expression and its
line (`Refused`), never guessed. Questions about the device (capability, name, shared memory,
SM count) are answered for the compile target (`Device`), not for this machine; environment
variables read as unset, so a result never depends on the reviewer's shell.

Names resolve the way Python would have bound them at that point of the module: a module's
top-level statements are executed lazily, one at a time, when a name they bind is first needed,
so `if IS_INTEL: CONFIGS += [...]` takes the branch the target takes, and host code that is
never needed is never looked at. Exceptions the evaluated code would raise (`KeyError`,
`ImportError`...) are `Raised` and can be caught by its own `try`; a refusal cannot.
"""

from __future__ import annotations

import ast
import itertools
import math
import operator
import sys
from dataclasses import dataclass, field

from ptxdiff.discovery.kernels import ModuleIndex, _Module, mutated_name
from ptxdiff.targets import Device

MAX_STEPS = 500_000          # evaluated nodes per Interp: bounds loops and recursion of host code
MAX_LEN = 100_000            # elements of any list/str/tuple/dict built
MAX_INT_BITS = 4096


class Refused(Exception):
    """The evaluator will not compute this; the message says what and where."""

    def __init__(self, reason: str, where: str | None = None, host_call: bool = False):
        super().__init__(reason)
        self.reason, self.where = reason, where
        self.host_call = host_call  # a call into a package that is not imported: `except Exception` may take it

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" if self.where else self.reason


class Raised(Exception):
    """An exception the interpreted code raises; its own `try/except` may catch it."""

    def __init__(self, type_name: str, message: str = ""):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message


# Python's exception hierarchy, as far as `except X:` matching needs it
_EXC_PARENTS = {
    "BaseException": None, "Exception": "BaseException", "ArithmeticError": "Exception",
    "ZeroDivisionError": "ArithmeticError", "OverflowError": "ArithmeticError", "LookupError": "Exception",
    "KeyError": "LookupError", "IndexError": "LookupError", "ImportError": "Exception",
    "ModuleNotFoundError": "ImportError", "NameError": "Exception", "AttributeError": "Exception",
    "TypeError": "Exception", "ValueError": "Exception", "RuntimeError": "Exception",
    "NotImplementedError": "RuntimeError", "AssertionError": "Exception", "OSError": "Exception",
    "StopIteration": "Exception", "RecursionError": "RuntimeError", "UnicodeError": "ValueError",
}


def _is_subclass(name: str, parent: str) -> bool:
    while name is not None:
        if name == parent:
            return True
        name = _EXC_PARENTS.get(name)
    return False


# -- values the evaluator hands around (besides plain ints, strs, lists...) ------------------------

@dataclass(frozen=True)
class External:
    """A name from a package that is not imported (triton, torch, math...): `dotted` says which."""

    dotted: str

    def __repr__(self) -> str:
        return self.dotted


@dataclass(frozen=True)
class DType:
    """A triton dtype (`tl.float16`), by its name in triton.language."""

    name: str

    def __repr__(self) -> str:
        return f"tl.{self.name}"


@dataclass(frozen=True)
class Constexpr:
    """`tl.constexpr(value)` at module level."""

    value: object

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


@dataclass(frozen=True)
class TritonConfig:
    """`triton.Config(kwargs, num_warps=..., num_stages=...)`, as the autotuner would see it."""

    kwargs: tuple[tuple[str, object], ...]
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None


@dataclass(frozen=True)
class Target:
    backend: str
    arch: int
    warp_size: int = 32


@dataclass
class Function:
    """A function (or lambda) of the repository: interpreted when called, never executed."""

    name: str
    node: ast.FunctionDef | ast.Lambda
    env: ModuleEnv
    outer: Scope | None
    before: int | None             # module position it was defined at (its defaults were evaluated there)
    decorators: tuple[object, ...] = ()
    _defaults: list | None = None

    def __repr__(self) -> str:
        return f"<function {self.name} of {self.env.mod.path}>"


@dataclass
class Class:
    name: str
    namespace: dict
    is_enum: bool = False

    def __repr__(self) -> str:
        return f"<class {self.name}>"


@dataclass(frozen=True)
class EnumMember:
    cls_name: str
    name: str
    value: object


@dataclass(frozen=True)
class Bound:
    """A function bound to its first argument (a classmethod's class)."""

    func: Function
    first: object


@dataclass
class Module:
    """A module of the repository (its names resolve through its ModuleEnv)."""

    env: ModuleEnv

    def __repr__(self) -> str:
        return f"<module {self.env.mod.name}>"


class Opaque:
    """A host object whose methods do nothing that matters here (a logger): calls return None."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"


@dataclass(frozen=True)
class Version:
    """packaging.version.parse(...) for release numbers: enough to compare versions."""

    release: tuple[int, ...]
    text: str

    def _key(self, other):
        if isinstance(other, str):
            other = parse_version(other)
        if not isinstance(other, Version):
            raise Raised("TypeError", "version compared with a non-version")
        n = max(len(self.release), len(other.release))
        return self.release + (0,) * (n - len(self.release)), other.release + (0,) * (n - len(other.release))

    def __lt__(self, other):
        a, b = self._key(other)
        return a < b

    def __le__(self, other):
        a, b = self._key(other)
        return a <= b

    def __gt__(self, other):
        a, b = self._key(other)
        return a > b

    def __ge__(self, other):
        a, b = self._key(other)
        return a >= b

    @property
    def major(self) -> int:
        return self.release[0] if self.release else 0

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0


def parse_version(text: str) -> Version:
    digits = []
    for part in str(text).split("+")[0].split("."):
        num = "".join(itertools.takewhile(str.isdigit, part))
        if not num:
            break
        digits.append(int(num))
        if num != part:
            break
    return Version(tuple(digits), str(text))


# -- what is known of packages that are never imported -----------------------------------------------

_DTYPES = {"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16",
           "fp8e4nv", "fp8e5", "float8_e4m3fn", "float8_e5m2"}
_TRITON_PREFIXES = ("triton.language", "triton")
_MATH_FUNCS = {"ceil", "floor", "sqrt", "log", "log2", "log10", "exp", "exp2", "pow", "isqrt", "gcd", "lcm", "prod",
               "fsum", "fabs", "isclose", "isfinite", "isinf", "isnan", "trunc", "copysign", "comb", "perm", "hypot",
               "sin", "cos", "tan", "atan", "atan2", "erf", "tanh", "ldexp", "frexp", "fmod", "degrees", "radians"}
_MATH_CONSTS = {"pi", "e", "inf", "nan", "tau"}
_OPERATOR_FUNCS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "neg", "and_", "or_", "xor", "not_", "eq",
                   "ne", "lt", "le", "gt", "ge", "itemgetter"}
_IDENTITY_DECORATORS = {"functools.cache", "functools.lru_cache", "functools.wraps", "functools.cached_property",
                        "builtins.staticmethod", "builtins.classmethod", "builtins.property", "typing.overload",
                        "torch.compiler.disable", "torch.no_grad", "torch.inference_mode", "torch._dynamo.disable",
                        "torch.jit.ignore", "torch.jit.unused"}
_IGNORED_CALLS = {"warnings.warn", "warnings.filterwarnings", "builtins.print", "logging.basicConfig"}


def _installed_version(package: str) -> str | None:
    """A package's version from its dist-info folder name, without importing it."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = sorted(site.glob(f"{package}-*.dist-info"))
    return found[-1].name[len(package) + 1:-len(".dist-info")] if found else None


class Scope:
    """Names visible to one piece of interpreted code: locals, enclosing functions, the module."""

    def __init__(self, env: ModuleEnv, before: int | None, local: dict | None = None,
                 outer: Scope | None = None, is_module: bool = False):
        self.env, self.before, self.outer = env, before, outer
        self.vars: dict = local if local is not None else {}
        self.is_module = is_module

    def lookup(self, name: str):
        scope = self
        while scope is not None:
            if name in scope.vars:
                value = scope.vars[name]
                if isinstance(value, _Lazy):
                    value = scope.vars[name] = value.force()
                return value
            scope = scope.outer
        return self.env.resolve(name, self.before)


class _Lazy:
    """A name an import binds, computed when first read: `from m import a, b` needs only what
    is used, so one name the evaluator refuses does not sink its neighbours."""

    def __init__(self, compute):
        self._compute, self._done, self._value = compute, False, None

    def force(self):
        if not self._done:
            self._value = self._compute()
            self._done = True
        return self._value


class _Return(Exception):
    def __init__(self, value):
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a (possibly compound) statement binds at module level."""
    names: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    elif isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            names |= _target_names(t)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        if stmt.value is not None or isinstance(stmt, ast.AugAssign):
            names |= _target_names(stmt.target)
    elif isinstance(stmt, ast.Import):
        names |= {a.asname or a.name.split(".")[0] for a in stmt.names}
    elif isinstance(stmt, ast.ImportFrom):
        names |= {a.asname or a.name for a in stmt.names if a.name != "*"}
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        names |= _target_names(stmt.target)
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.AsyncFor, ast.AsyncWith)) or \
            type(stmt).__name__ == "TryStar":
        for block in ("body", "orelse", "finalbody"):
            for s in getattr(stmt, block, []) or []:
                names |= _binds(s)
        for h in getattr(stmt, "handlers", []) or []:
            if h.name:
                names.add(h.name)
            for s in h.body:
                names |= _binds(s)
    return names


def _target_names(t: ast.expr) -> set[str]:
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(e) for e in t.elts)) if t.elts else set()
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return set()


class ModuleEnv:
    """One module's names, each computed when first needed, as of a position in the module."""

    def __init__(self, interp: Interp, mod: _Module):
        self.interp, self.mod = interp, mod
        body = mod.tree.body if mod.tree is not None else []
        self.body = body
        self.binders: dict[str, list[int]] = {}
        self.mutations: dict[str, list[int]] = {}
        self.stars: list[int] = []
        for i, stmt in enumerate(body):
            for name in _binds(stmt):
                self.binders.setdefault(name, []).append(i)
            target = mutated_name(stmt)
            if target:
                self.mutations.setdefault(target, []).append(i)
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                self.stars.append(i)
        self._done: dict[int, dict | BaseException] = {}
        self._notes: dict[int, tuple[str, ...]] = {}   # assumptions made while executing a statement
        self._running: set[int] = set()
        self._mutated: set[int] = set()

    def has(self, name: str) -> bool:
        return name in self.binders or bool(self.stars)

    def resolve(self, name: str, before: int | None = None):
        """The value `name` has at statement `before` (None: after the whole module ran)."""
        end = len(self.body) if before is None else before
        for i in reversed(self.binders.get(name, ())):
            if i >= end:
                continue
            out = self._execute(i)
            if isinstance(out, BaseException):
                if isinstance(out, Raised) and not _target_in_failed(self.body[i], name):
                    continue
                raise out
            if name in out:
                value = out[name]
                if isinstance(value, _Lazy):
                    value = out[name] = value.force()
                if isinstance(value, BaseException):
                    raise value
                self._apply_mutations(name, i, end)
                self.interp.used.extend(self._notes.get(i, ()))
                return value
        for i in reversed(self.stars):
            if i >= end:
                continue
            stmt = self.body[i]
            other = self.interp.repo_module(self.interp.absolute(self.mod, stmt))
            if other is not None and name in other.binders and not name.startswith("_"):
                return other.resolve(name)
        if name in _BUILTINS:
            return _BUILTINS[name]
        if name in _UNSAFE_BUILTINS:
            raise Refused(f"{name}() is not evaluated: it reaches files, processes or code")
        if name in ("__name__",):
            return self.mod.name
        if name == "__file__":
            return self.mod.path
        raise Raised("NameError", f"name {name!r} is not defined")

    def _apply_mutations(self, name: str, bound_at: int, end: int) -> None:
        for j in self.mutations.get(name, ()):
            if bound_at < j < end and j not in self._mutated:
                self._mutated.add(j)
                out = self._execute(j)
                if isinstance(out, BaseException):
                    raise out

    def _execute(self, i: int) -> dict | BaseException:
        if i in self._done:
            return self._done[i]
        if i in self._running:
            raise Refused("the module reads a name while it is being computed (an import cycle)",
                          self.interp.where(self, self.body[i]))
        self._running.add(i)
        start = len(self.interp.assumptions)
        scope = Scope(self, i, {}, is_module=True)
        try:
            self.interp.exec_block([self.body[i]], scope)
            result: dict | BaseException = scope.vars
        except (Refused, Raised) as e:
            if isinstance(e, Refused) and e.where is None:
                e.where = self.interp.where(self, self.body[i])
            result = e
        except (_Return, _Break, _Continue):
            result = Refused("return/break outside a function", self.interp.where(self, self.body[i]))
        finally:
            self._running.discard(i)
        self._notes[i] = tuple(self.interp.assumptions[start:])
        self._done[i] = result
        return result


def _target_in_failed(stmt: ast.stmt, name: str) -> bool:
    return name in _binds(stmt)


class _Builtin:
    """A Python builtin the evaluator allows, called with evaluated arguments."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


class _ExcClass:
    """An exception class name used in `raise X(...)` / `except X`."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


PRESENT_PACKAGES = {"triton", "torch", "numpy", "packaging"}  # a reviewer of Triton kernels has these
_SAFE_BUILTINS = ("abs", "all", "any", "bool", "dict", "divmod", "enumerate", "float", "int", "len", "list", "max",
                  "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "frozenset",
                  "chr", "ord", "hex", "repr", "filter", "map", "isinstance", "hasattr", "getattr", "pow", "iter",
                  "next", "callable", "id", "hash", "format", "bin", "oct", "slice", "type")
_UNSAFE_BUILTINS = {"open", "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "input",
                    "breakpoint", "exit", "quit", "memoryview", "setattr", "delattr", "super", "__build_class__",
                    "help", "dir"}
_ITERATING = {"sum", "any", "all", "sorted", "tuple", "list", "set", "frozenset", "enumerate", "reversed", "dict"}
_BUILTINS: dict = {name: _Builtin(name) for name in _SAFE_BUILTINS}
_BUILTINS.update({name: _ExcClass(name) for name in _EXC_PARENTS})
_BUILTINS.update({"None": None, "True": True, "False": False, "print": External("builtins.print"),
                  "staticmethod": External("builtins.staticmethod"), "classmethod": External("builtins.classmethod"),
                  "property": External("builtins.property"), "object": External("builtins.object"),
                  "NotImplemented": NotImplemented, "Ellipsis": Ellipsis})


def _check_size(value):
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and len(value) > MAX_LEN:
        raise Refused(f"a value of {len(value)} elements (more than {MAX_LEN})")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise Refused("an integer of more than 4096 bits")
    return value


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.MatMult: None}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: operator.contains(b, a), ast.NotIn: lambda a, b: not operator.contains(b, a)}
_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset, range, slice)
_METHODS = {
    str: {"format", "startswith", "endswith", "lower", "upper", "split", "rsplit", "join", "replace", "strip",
          "lstrip", "rstrip", "find", "rfind", "count", "isdigit", "isalpha", "isalnum", "isupper", "islower",
          "partition", "rpartition", "zfill", "title", "capitalize", "splitlines", "index", "casefold", "removeprefix",
          "removesuffix", "ljust", "rjust", "center"},
    list: {"append", "extend", "insert", "pop", "index", "count", "copy", "remove", "reverse", "sort", "clear"},
    tuple: {"index", "count"},
    dict: {"get", "items", "keys", "values", "update", "copy", "setdefault", "pop", "clear"},
    set: {"add", "update", "union", "intersection", "difference", "issubset", "issuperset", "discard", "copy",
          "remove", "pop"},
    frozenset: {"union", "intersection", "difference", "issubset", "issuperset", "copy"},
    int: {"bit_length", "real", "imag", "numerator", "denominator", "to_bytes"},
    float: {"is_integer", "real", "imag", "hex"},
    range: {"start", "stop", "step", "index", "count"},
}


class Interp:
    """Evaluates one snapshot's module-level values for one compile target."""

    def __init__(self, index: ModuleIndex, device: Device):
        self.index, self.device = index, device
        self._envs: dict[str, ModuleEnv] = {}
        self.steps = 0
        self._depth = 0
        self.assumptions: list[str] = []   # what was assumed instead of refused (shown with the rows)
        self._import_guards = 0            # enclosing `try` blocks that catch ImportError
        self.used: list[str] = []          # assumptions behind the values resolved since the caller cleared it

    # -- modules ---------------------------------------------------------------------------------
    def env(self, path: str) -> ModuleEnv:
        if path not in self._envs:
            mod = self.index.parse(path)
            if mod.error:
                raise Refused(mod.error)
            self._envs[path] = ModuleEnv(self, mod)
        return self._envs[path]

    def repo_module(self, dotted: str) -> ModuleEnv | None:
        path = self.index.path_of(dotted)
        return self.env(path) if path else None

    def absolute(self, mod: _Module, stmt: ast.ImportFrom) -> str:
        return self.index.absolute(mod, stmt)

    def where(self, env: ModuleEnv, node: ast.AST) -> str:
        line = getattr(node, "lineno", None)
        text = ast.unparse(node).splitlines()[0] if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) \
            else f"def {node.name}" if isinstance(node, ast.FunctionDef) else f"class {node.name}"
        if len(text) > 120:
            text = text[:117] + "..."
        return f"{env.mod.path}:{line}: `{text}`" if line else f"{env.mod.path}: `{text}`"

    def module_value(self, dotted: str):
        """What `import dotted` gives: a repository module, an External for anything else.
        Triton's own modules are looked up for real (they are the tool's, not the repository's),
        so `try: from triton.language.extra.libdevice import x / except ImportError` works."""
        env = self.repo_module(dotted)
        if env is not None:
            return Module(env)
        if self._package_dir(dotted):
            return Module(self._namespace_env(dotted))
        if dotted == "triton" or dotted.startswith("triton."):
            _triton_module_exists(dotted)
        return External(dotted)

    def _package_dir(self, dotted: str) -> bool:
        rel = dotted.replace(".", "/") + "/"
        return any(p.startswith(f"{r}/{rel}" if r else rel) for r in self.index.roots for p in self.index.snapshot.paths)

    def _namespace_env(self, dotted: str) -> ModuleEnv:
        key = f"<namespace {dotted}>"
        if key not in self._envs:
            self._envs[key] = ModuleEnv(self, _Module(path=dotted.replace(".", "/"), name=dotted, tree=ast.Module([], [])))
        return self._envs[key]

    def attribute_of_module(self, module: Module, name: str):
        env = module.env
        if name in env.binders or env.stars:
            try:
                return env.resolve(name)
            except Raised as e:
                if e.type_name != "NameError":
                    raise
        sub = self.module_value_or_none(f"{env.mod.name}.{name}")
        if sub is not None:
            return sub
        raise Raised("AttributeError", f"module {env.mod.name!r} has no attribute {name!r}")

    def module_value_or_none(self, dotted: str):
        env = self.repo_module(dotted)
        if env is not None:
            return Module(env)
        if self._package_dir(dotted):
            return Module(self._namespace_env(dotted))
        return None

    # -- statements ------------------------------------------------------------------------------
    def exec_block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for stmt in stmts:
            self.exec_stmt(stmt, scope)

    def _tick(self, node: ast.AST, env: ModuleEnv) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Refused(f"more than {MAX_STEPS} evaluation steps (a loop too long to interpret)",
                          self.where(env, node))

    def exec_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        self._tick(stmt, scope.env)
        if isinstance(stmt, ast.Expr):
            value = stmt.value
            if isinstance(value, ast.Constant):
                return  # a docstring
            self.eval(value, scope)
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value, scope)
            for target in stmt.targets:
                self.assign(target, value, scope)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value, scope), scope)
        elif isinstance(stmt, ast.AugAssign):
            op = _BINOPS.get(type(stmt.op))
            if op is None:
                raise Refused("this operator is not evaluated", self.where(scope.env, stmt))
            current = self.eval(_as_load(stmt.target), scope)
            rhs = self.eval(stmt.value, scope)
            if isinstance(current, list) and isinstance(stmt.op, ast.Add):
                current.extend(self._iterate(rhs))
                _check_size(current)
                new = current
            else:
                new = self.binop(op, current, rhs)
            self.assign(stmt.target, new, scope)
        elif isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value, scope) if stmt.value is not None else None)
        elif isinstance(stmt, ast.If):
            self.exec_block(stmt.body if self.truth(self.eval(stmt.test, scope)) else stmt.orelse, scope)
        elif isinstance(stmt, ast.For):
            broke = False
            for item in self._iterate(self.eval(stmt.iter, scope)):
                self._tick(stmt, scope.env)
                self.assign(stmt.target, item, scope)
                try:
                    self.exec_block(stmt.body, scope)
                except _Break:
                    broke = True
                    break
                except _Continue:
                    continue
            if not broke:
                self.exec_block(stmt.orelse, scope)
        elif isinstance(stmt, ast.While):
            broke = False
            while self.truth(self.eval(stmt.test, scope)):
                self._tick(stmt, scope.env)
                try:
                    self.exec_block(stmt.body, scope)
                except _Break:
                    broke = True
                    break
                except _Continue:
                    continue
            if not broke:
                self.exec_block(stmt.orelse, scope)
        elif isinstance(stmt, ast.Break):
            raise _Break()
        elif isinstance(stmt, ast.Continue):
            raise _Continue()
        elif isinstance(stmt, ast.Pass):
            return
        elif isinstance(stmt, ast.Try):
            self._try(stmt, scope)
        elif isinstance(stmt, ast.Raise):
            exc = self.eval(stmt.exc, scope) if stmt.exc is not None else None
            name = exc.name if isinstance(exc, _ExcClass) else exc.type_name if isinstance(exc, Raised) else None
            if name is None:
                raise Refused("raises something that is not a builtin exception", self.where(scope.env, stmt))
            raise exc if isinstance(exc, Raised) else Raised(name)
        elif isinstance(stmt, ast.Assert):
            if not self.truth(self.eval(stmt.test, scope)):
                raise Raised("AssertionError", str(self.eval(stmt.msg, scope)) if stmt.msg else "")
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if self.repo_module(alias.name) is None:
                    self._optional_import(alias.name)
                if alias.asname:
                    scope.vars[alias.asname] = self.module_value(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self.module_value(alias.name)  # an ImportError if a triton submodule is missing
                    scope.vars[top] = self.module_value(top)
        elif isinstance(stmt, ast.ImportFrom):
            self._import_from(stmt, scope)
        elif isinstance(stmt, ast.FunctionDef):
            scope.vars[stmt.name] = self.function(stmt, scope)
        elif isinstance(stmt, ast.ClassDef):
            scope.vars[stmt.name] = self.klass(stmt, scope)
        elif isinstance(stmt, (ast.Global, ast.Nonlocal)):
            raise Refused("global/nonlocal state is not interpreted", self.where(scope.env, stmt))
        else:
            raise Refused(f"{type(stmt).__name__} statements are not interpreted", self.where(scope.env, stmt))

    def _try(self, stmt: ast.Try, scope: Scope) -> None:
        guarded = any(self._matches(h, Raised("ImportError"), scope) for h in stmt.handlers)
        try:
            try:
                try:
                    self._import_guards += guarded
                    try:
                        self.exec_block(stmt.body, scope)
                    finally:
                        self._import_guards -= guarded
                except Refused as refused:
                    # host code of a package we do not import, under `except Exception`: take the
                    # handler, as the code does when that package is missing, and say so
                    if not refused.host_call or not any(self._matches(h, Raised("Exception"), scope)
                                                        for h in stmt.handlers):
                        raise
                    self.assumptions.append(f"{refused}: assumed it raises (the `except` branch taken)")
                    raise Raised("Exception", str(refused)) from None
            except Raised as e:
                for handler in stmt.handlers:
                    if self._matches(handler, e, scope):
                        if handler.name:
                            scope.vars[handler.name] = e
                        self.exec_block(handler.body, scope)
                        break
                else:
                    raise
            else:
                self.exec_block(stmt.orelse, scope)
        finally:
            if stmt.finalbody:
                self.exec_block(stmt.finalbody, scope)

    def _matches(self, handler: ast.ExceptHandler, e: Raised, scope: Scope) -> bool:
        if handler.type is None:
            return True
        kinds = self.eval(handler.type, scope)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        for k in kinds:
            if isinstance(k, _ExcClass) and _is_subclass(e.type_name, k.name):
                return True
            if isinstance(k, External) and k.dotted.endswith(("PackageNotFoundError", "InvalidVersion")):
                continue
        return False

    def _import_from(self, stmt: ast.ImportFrom, scope: Scope) -> None:
        base = self.absolute(scope.env.mod, stmt)
        env = self.repo_module(base)
        for alias in stmt.names:
            if alias.name == "*":
                continue  # ModuleEnv.resolve looks through star imports
            bound = alias.asname or alias.name
            if env is not None:
                if alias.name in env.binders:
                    scope.vars[bound] = _Lazy(lambda env=env, name=alias.name: env.resolve(name))
                    continue
                if env.stars:
                    try:
                        scope.vars[bound] = env.resolve(alias.name)
                        continue
                    except Raised as e:
                        if e.type_name != "NameError":
                            raise
                sub = self.module_value_or_none(f"{base}.{alias.name}")
                if sub is None:
                    raise Raised("ImportError", f"cannot import name {alias.name!r} from {base!r}")
                scope.vars[bound] = sub
            elif self._package_dir(base):
                sub = self.module_value_or_none(f"{base}.{alias.name}")
                if sub is None:
                    raise Raised("ImportError", f"cannot import name {alias.name!r} from {base!r}")
                scope.vars[bound] = sub
            else:
                if base == "triton" or base.startswith("triton."):
                    _triton_module_exists(base)
                self._optional_import(base)
                scope.vars[bound] = self.attribute(External(base), alias.name, importing=True)

    def _optional_import(self, module: str) -> None:
        """Under `try: ... except ImportError:`, another package (not triton, torch, numpy or the
        standard library) is taken as not installed: the code's own fallback runs, and that is
        said. Whether it is installed on the reviewer's machine is not a fact of the revision."""
        top = module.split(".")[0]
        if self._import_guards and top not in PRESENT_PACKAGES and top not in sys.stdlib_module_names:
            self.assumptions.append(f"import {module}: assumed not installed (the `except ImportError` branch taken)")
            raise Raised("ImportError", f"no module named {module!r}")

    def assign(self, target: ast.expr, value, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.vars[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(self._iterate(value))
            star = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if star:
                i = star[0]
                after = len(target.elts) - i - 1
                if len(items) < len(target.elts) - 1:
                    raise Raised("ValueError", "not enough values to unpack")
                parts = items[:i] + [items[i:len(items) - after]] + items[len(items) - after:]
            else:
                if len(items) != len(target.elts):
                    raise Raised("ValueError", f"expected {len(target.elts)} values to unpack, got {len(items)}")
                parts = items
            for elt, item in zip(target.elts, parts):
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, item, scope)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, scope)
            if not isinstance(container, (list, dict)):
                raise Refused("item assignment on a value that is not a list or dict", self.where(scope.env, target))
            container[self.eval(target.slice, scope)] = value
            _check_size(container)
        else:
            raise Refused("assignment to an attribute is not interpreted", self.where(scope.env, target))

    # -- definitions -----------------------------------------------------------------------------
    def function(self, node: ast.FunctionDef | ast.Lambda, scope: Scope) -> Function:
        outer = None if scope.is_module else scope
        name = node.name if isinstance(node, ast.FunctionDef) else "<lambda>"
        decorators = ()
        if isinstance(node, ast.FunctionDef):
            decorators = tuple(self._decorator(d, scope) for d in node.decorator_list)
        return Function(name, node, scope.env, outer, scope.before, decorators)

    def _decorator(self, node: ast.expr, scope: Scope):
        """What a decorator is, without calling it: its callee (and whether it was called)."""
        callee = node.func if isinstance(node, ast.Call) else node
        try:
            return self.eval(callee, scope)
        except (Refused, Raised) as e:
            return e

    def defaults(self, fn: Function) -> list:
        if fn._defaults is None:
            scope = Scope(fn.env, fn.before, outer=fn.outer)
            fn._defaults = [self.eval(d, scope) for d in fn.node.args.defaults]
        return fn._defaults

    def klass(self, node: ast.ClassDef, scope: Scope) -> Class:
        bases = [self.eval(b, scope) for b in node.bases]
        is_enum = any(isinstance(b, External) and b.dotted in ("enum.Enum", "enum.IntEnum", "enum.StrEnum")
                      or isinstance(b, Class) and b.is_enum for b in bases)
        for b in bases:
            if not (isinstance(b, (Class, External)) and (not isinstance(b, External) or b.dotted.startswith(
                    ("enum.", "builtins.object", "typing.")))):
                raise Refused("a class with a base the evaluator does not know", self.where(scope.env, node))
        inner = Scope(scope.env, scope.before, {}, outer=None if scope.is_module else scope)
        inner.is_module = True  # methods of a class do not close over its namespace
        for b in bases:
            if isinstance(b, Class):
                inner.vars.update(b.namespace)
        for stmt in node.body:
            self.exec_stmt(stmt, inner)
        cls = Class(node.name, inner.vars, is_enum)
        if is_enum:
            for name, value in list(inner.vars.items()):
                if not name.startswith("_") and not isinstance(value, (Function, Bound)):
                    inner.vars[name] = EnumMember(node.name, name, value)
        return cls

    # -- expressions -----------------------------------------------------------------------------
    def eval(self, node: ast.expr, scope: Scope):
        self._tick(node, scope.env)
        self._depth += 1
        try:
            if self._depth > 200:
                raise Refused("expression nested too deeply", self.where(scope.env, node))
            return self._eval(node, scope)
        except Refused as e:
            if e.where is None:
                e.where = self.where(scope.env, node)
            raise
        except RecursionError:
            raise Refused("recursion too deep to interpret", self.where(scope.env, node)) from None
        finally:
            self._depth -= 1

    def _eval(self, node: ast.expr, scope: Scope):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return scope.lookup(node.id)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, scope), node.attr)
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise Refused("this operator is not evaluated")
            return self.binop(op, self.eval(node.left, scope), self.eval(node.right, scope))
        if isinstance(node, ast.UnaryOp):
            v = self.eval(node.operand, scope)
            if isinstance(node.op, ast.Not):
                return not self.truth(v)
            self._plain(v)
            try:
                return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](v)
            except TypeError as e:
                raise Raised("TypeError", str(e)) from None
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            v = None
            for sub in node.values:
                v = self.eval(sub, scope)
                if self.truth(v) != is_and:
                    return v
            return v
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, scope)
            for op, comp in zip(node.ops, node.comparators):
                right = self.eval(comp, scope)
                if not self.compare(type(op), left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.eval(node.body if self.truth(self.eval(node.test, scope)) else node.orelse, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    items.extend(self._iterate(self.eval(e.value, scope)))
                else:
                    items.append(self.eval(e, scope))
            _check_size(items)
            return items if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) \
                else set(self._hashable(items))
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    other = self.eval(v, scope)
                    if not isinstance(other, dict):
                        raise Refused("** of something that is not a dict")
                    out.update(other)
                else:
                    out[self._hashable([self.eval(k, scope)])[0]] = self.eval(v, scope)
            return _check_size(out)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node, scope)
        if isinstance(node, ast.Subscript):
            return self.subscript(self.eval(node.value, scope), self.eval(node.slice, scope))
        if isinstance(node, ast.Slice):
            parts = [self.eval(p, scope) if p is not None else None for p in (node.lower, node.upper, node.step)]
            return slice(*parts)
        if isinstance(node, ast.Call):
            return self._call_node(node, scope)
        if isinstance(node, ast.Lambda):
            return self.function(node, scope)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                else:
                    value = self.eval(v.value, scope)
                    self._plain_or_known(value)
                    if v.conversion == ord("r"):
                        value = repr(value)
                    elif v.conversion == ord("s"):
                        value = str(value)
                    spec = self.eval(v.format_spec, scope) if v.format_spec is not None else ""
                    parts.append(format(value, spec))
            return _check_size("".join(parts))
        if isinstance(node, ast.NamedExpr):
            value = self.eval(node.value, scope)
            scope.vars[node.target.id] = value
            return value
        raise Refused(f"{type(node).__name__} expressions are not evaluated")

    def _comprehension(self, node, scope: Scope):
        inner = Scope(scope.env, scope.before, {}, outer=scope)
        results: list = []

        def loop(generators):
            if not generators:
                self._tick(node, scope.env)
                if isinstance(node, ast.DictComp):
                    results.append((self.eval(node.key, inner), self.eval(node.value, inner)))
                else:
                    results.append(self.eval(node.elt, inner))
                if len(results) > MAX_LEN:
                    raise Refused(f"a comprehension of more than {MAX_LEN} elements")
                return
            gen = generators[0]
            source = self.eval(gen.iter, inner if len(generators) < len(node.generators) else scope)
            for item in self._iterate(source):
                self.assign(gen.target, item, inner)
                if all(self.truth(self.eval(cond, inner)) for cond in gen.ifs):
                    loop(generators[1:])
        loop(node.generators)
        if isinstance(node, ast.DictComp):
            return dict(results)
        if isinstance(node, ast.SetComp):
            return set(self._hashable(results))
        return results

    def _hashable(self, items):
        for item in items:
            try:
                hash(item)
            except TypeError:
                raise Raised("TypeError", "unhashable type") from None
        return items

    def truth(self, v) -> bool:
        if isinstance(v, External):
            raise Refused(f"the truth of {v.dotted}, which is host code")
        if isinstance(v, (Function, Class, Module, Bound, EnumMember, Constexpr, DType, TritonConfig, Version,
                          Opaque, Target)):
            return True if not isinstance(v, Constexpr) else bool(v.value)
        self._plain(v)
        return bool(v)

    def _plain(self, v) -> None:
        if not isinstance(v, _PLAIN):
            raise Refused(f"an operation on {v!r}, which the evaluator does not compute")

    def _plain_or_known(self, v) -> None:
        if not isinstance(v, (*_PLAIN, DType, Version, EnumMember, Constexpr)):
            self._plain(v)

    def binop(self, op, a, b):
        if isinstance(a, Constexpr):
            a = a.value
        if isinstance(b, Constexpr):
            b = b.value
        self._plain(a)
        self._plain(b)
        if op is operator.pow and isinstance(b, int) and isinstance(a, int) and abs(a) > 1 and \
                b * max(1, abs(a).bit_length()) > MAX_INT_BITS:
            raise Refused("a power too large to compute")
        if op is operator.lshift and isinstance(b, int) and b > MAX_INT_BITS:
            raise Refused("a shift too large to compute")
        if op is operator.mul and isinstance(a, (str, bytes, list, tuple)) and isinstance(b, int) and len(a) * b > MAX_LEN \
                or op is operator.mul and isinstance(b, (str, bytes, list, tuple)) and isinstance(a, int) and len(b) * a > MAX_LEN:
            raise Refused(f"a value of more than {MAX_LEN} elements")
        try:
            return _check_size(op(a, b))
        except ZeroDivisionError as e:
            raise Raised("ZeroDivisionError", str(e)) from None
        except (TypeError, ValueError, OverflowError) as e:
            raise Raised(type(e).__name__, str(e)) from None

    def compare(self, op, a, b) -> bool:
        if op in (ast.Is, ast.IsNot):
            same = a is b or (a is None and b is None)
            if isinstance(a, External) or isinstance(b, External):
                if a is None or b is None:
                    same = False  # an external object is never None
                else:
                    raise Refused("identity of host objects")
            return same if op is ast.Is else not same
        if isinstance(a, Constexpr):
            a = a.value
        if isinstance(b, Constexpr):
            b = b.value
        for v in (a, b):
            if isinstance(v, External):
                if op in (ast.Eq, ast.NotEq) and isinstance(a, External) and isinstance(b, External):
                    return (a == b) == (op is ast.Eq)
                raise Refused(f"a comparison with {v.dotted}, which is host code")
            if isinstance(v, (Function, Module, Opaque)):
                if op in (ast.Eq, ast.NotEq):
                    return (a is b) == (op is ast.Eq)
                raise Refused("a comparison of host objects")
        try:
            return bool(_CMPOPS[op](a, b))
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None

    def _iterate(self, v):
        if isinstance(v, Constexpr):
            v = v.value
        if isinstance(v, Class) and v.is_enum:
            return [m for m in v.namespace.values() if isinstance(m, EnumMember)]
        if isinstance(v, (list, tuple, str, bytes, range, set, frozenset)):
            if len(v) > MAX_LEN:
                raise Refused(f"iterating over more than {MAX_LEN} elements")
            return list(v)
        if isinstance(v, dict):
            return list(v)
        raise Refused(f"iterating over {v!r}, which the evaluator does not compute")

    def subscript(self, container, index):
        if isinstance(container, Constexpr):
            container = container.value
        if isinstance(container, Class) and container.is_enum:
            member = container.namespace.get(index)
            if not isinstance(member, EnumMember):
                raise Raised("KeyError", repr(index))
            return member
        if isinstance(container, External):
            raise Refused(f"indexing {container.dotted}, which is host code")
        if isinstance(container, _Props):
            return container.item(index)
        self._plain(container)
        try:
            return container[index]
        except KeyError as e:
            raise Raised("KeyError", str(e)) from None
        except IndexError as e:
            raise Raised("IndexError", str(e)) from None
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None

    def attribute(self, obj, name: str, importing: bool = False):
        if isinstance(obj, Module):
            return self.attribute_of_module(obj, name)
        if isinstance(obj, External):
            return self._external_attr(obj, name, importing)
        if isinstance(obj, Class):
            if name in obj.namespace:
                value = obj.namespace[name]
                if isinstance(value, Function) and any(
                        isinstance(d, External) and d.dotted == "builtins.classmethod" for d in value.decorators):
                    return Bound(value, obj)
                return value
            if name == "__name__":
                return obj.name
            raise Raised("AttributeError", f"type object {obj.name!r} has no attribute {name!r}")
        if isinstance(obj, EnumMember):
            if name == "value":
                return obj.value
            if name == "name":
                return obj.name
            raise Raised("AttributeError", name)
        if isinstance(obj, Constexpr):
            if name == "value":
                return obj.value
            raise Refused(f"attribute {name} of a constexpr")
        if isinstance(obj, TritonConfig):
            if name == "kwargs":
                return dict(obj.kwargs)
            if name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
                return getattr(obj, name)
            raise Refused(f"attribute {name} of a triton.Config")
        if isinstance(obj, (Target, Version, _Props)):
            if isinstance(obj, _Props):
                return obj.attr(name)
            if hasattr(obj, name) and not name.startswith("_"):
                return getattr(obj, name)
            raise Raised("AttributeError", name)
        if isinstance(obj, DType):
            if name in DTYPE_QUESTIONS:  # triton's own answers about one of its dtypes (pure)
                answer = getattr(real_object(f"triton.language.{obj.name}"), name)
                return _DTypeQuestion(answer) if callable(answer) else answer
            if name == "name":
                return obj.name
            raise Refused(f"attribute {name} of {obj!r}")
        if isinstance(obj, Opaque):
            return Opaque(f"{obj.what}.{name}")
        if isinstance(obj, Raised) and name == "args":
            return (obj.message,)
        if isinstance(obj, Function) and name in ("__name__", "__qualname__"):
            return obj.name
        for kind, names in _METHODS.items():
            if isinstance(obj, kind) and not isinstance(obj, bool) and name in names:
                return getattr(obj, name)
        if isinstance(obj, _PLAIN):
            raise Raised("AttributeError", f"{type(obj).__name__!r} object has no attribute {name!r}")
        raise Refused(f"attribute {name} of {obj!r}")

    def _external_attr(self, obj: External, name: str, importing: bool):
        dotted = f"{obj.dotted}.{name}"
        if dotted.startswith("triton.language.") and name in _DTYPES and dotted.count(".") == 2:
            return DType(name)
        if dotted.startswith("triton.language.core.") and name in _DTYPES:
            return DType(name)
        if dotted in ("triton.__version__", "torch.__version__"):
            version = _installed_version(dotted.split(".")[0])
            if version is None:
                raise Refused(f"{dotted}: the package is not installed")
            return version
        if obj.dotted == "math" and name in _MATH_CONSTS:
            return getattr(math, name)
        if dotted == "sys.platform":
            return "linux"
        if dotted == "sys.version_info":
            return tuple(sys.version_info)
        if dotted == "sys.maxsize":
            return sys.maxsize
        if dotted == "torch.version.hip":
            return None
        if dotted == "torch.version.cuda":
            return "12.8"
        if dotted == "os.environ":
            return _Props("os.environ", {})
        if dotted == "triton.runtime.driver.active.utils" or dotted == "triton.runtime.driver.active":
            return External(dotted)
        if (dotted.startswith("triton.") and not dotted.startswith("triton.runtime")) and not importing:
            real_object(dotted)  # `triton.language.gather` on this triton: AttributeError if missing
        return External(dotted)

    # -- calls -----------------------------------------------------------------------------------
    def _call_node(self, node: ast.Call, scope: Scope):
        fn = self.eval(node.func, scope)
        args: list = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self._iterate(self.eval(a.value, scope)))
            else:
                args.append(self.eval(a, scope))
        kwargs: dict = {}
        for k in node.keywords:
            if k.arg is None:
                extra = self.eval(k.value, scope)
                if not isinstance(extra, dict):
                    raise Refused("** of something that is not a dict")
                kwargs.update(extra)
            else:
                kwargs[k.arg] = self.eval(k.value, scope)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args: list, kwargs: dict, node=None):
        if isinstance(fn, Function):
            return self.call_function(fn, args, kwargs)
        if isinstance(fn, Bound):
            return self.call_function(fn.func, [fn.first, *args], kwargs)
        if isinstance(fn, _Builtin):
            return self._builtin(fn.name, args, kwargs, node)
        if isinstance(fn, _ExcClass):
            return Raised(fn.name, str(args[0]) if args else "")
        if isinstance(fn, External):
            return self._external_call(fn.dotted, args, kwargs)
        if isinstance(fn, Class):
            if fn.is_enum and len(args) == 1:
                for m in fn.namespace.values():
                    if isinstance(m, EnumMember) and m.value == args[0]:
                        return m
                raise Raised("ValueError", f"{args[0]!r} is not a valid {fn.name}")
            raise Refused(f"instances of class {fn.name} are not interpreted")
        if isinstance(fn, Opaque):
            return None
        if isinstance(fn, _DTypeQuestion):
            return from_triton(fn.method(*args))
        if isinstance(fn, _Partial):
            return self.call(fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, node)
        if callable(fn) and getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, _PLAIN):
            # a bound method of a plain value (list.append, str.format): safe builtin code
            args = [self._pyfunc(a) for a in args]
            kwargs = {k: self._pyfunc(v) for k, v in kwargs.items()}
            try:
                return _check_size(fn(*args, **kwargs))
            except (Raised, Refused):
                raise
            except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
                raise Raised(type(e).__name__, str(e)) from None
        raise Refused(f"calling {fn!r}, which is host code")

    def call_function(self, fn: Function, args: list, kwargs: dict):
        for d in fn.decorators:
            if isinstance(d, (Refused, Raised)):
                raise Refused(f"{fn.name} has a decorator the evaluator cannot read")
            if isinstance(d, External) and d.dotted in _IDENTITY_DECORATORS:
                continue
            if isinstance(d, External) and d.dotted.startswith(("triton.jit", "triton.runtime.jit", "triton.language")):
                raise Refused(f"{fn.name} is a @jit function: it runs on the GPU, not on the host")
            raise Refused(f"{fn.name} is wrapped by {d!r}, which the evaluator does not interpret")
        node = fn.node
        a = node.args
        if a.vararg is not None or a.kwarg is not None or a.posonlyargs:
            local = self._bind_general(fn, args, kwargs)
        else:
            names = [p.arg for p in a.args]
            defaults = self.defaults(fn)
            local = {}
            if len(args) > len(names):
                raise Raised("TypeError", f"{fn.name}() takes {len(names)} positional arguments")
            local.update(zip(names, args))
            for k, v in kwargs.items():
                if k in local or k not in names and k not in [p.arg for p in a.kwonlyargs]:
                    raise Raised("TypeError", f"{fn.name}() got an unexpected or repeated argument {k!r}")
                local[k] = v
            first_default = len(names) - len(defaults)
            for i, n in enumerate(names):
                if n not in local:
                    if i >= first_default:
                        local[n] = defaults[i - first_default]
                    else:
                        raise Raised("TypeError", f"{fn.name}() missing argument {n!r}")
            for p, d in zip(a.kwonlyargs, a.kw_defaults):
                if p.arg not in local:
                    if d is None:
                        raise Raised("TypeError", f"{fn.name}() missing argument {p.arg!r}")
                    local[p.arg] = self.eval(d, Scope(fn.env, fn.before, outer=fn.outer))
        # a function reads its module's globals as they are once the module has run
        scope = Scope(fn.env, None, local, outer=fn.outer)
        self._depth += 10
        try:
            if self._depth > 200:
                raise Refused(f"calls nested too deeply ({fn.name})")
            if isinstance(node, ast.Lambda):
                return self.eval(node.body, scope)
            try:
                self.exec_block(node.body, scope)
            except _Return as r:
                return r.value
            return None
        finally:
            self._depth -= 10

    def _bind_general(self, fn: Function, args: list, kwargs: dict) -> dict:
        a = fn.node.args
        positional = [p.arg for p in [*a.posonlyargs, *a.args]]
        defaults = self.defaults(fn)
        local = dict(zip(positional, args))
        if a.vararg is not None:
            local[a.vararg.arg] = tuple(args[len(positional):])
        elif len(args) > len(positional):
            raise Raised("TypeError", f"{fn.name}() takes {len(positional)} positional arguments")
        extra = {}
        for k, v in kwargs.items():
            if k in positional or k in [p.arg for p in a.kwonlyargs]:
                local[k] = v
            elif a.kwarg is not None:
                extra[k] = v
            else:
                raise Raised("TypeError", f"{fn.name}() got an unexpected argument {k!r}")
        if a.kwarg is not None:
            local[a.kwarg.arg] = extra
        first_default = len(positional) - len(defaults)
        for i, n in enumerate(positional):
            if n not in local:
                if i < first_default:
                    raise Raised("TypeError", f"{fn.name}() missing argument {n!r}")
                local[n] = defaults[i - first_default]
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg not in local:
                if d is None:
                    raise Raised("TypeError", f"{fn.name}() missing argument {p.arg!r}")
                local[p.arg] = self.eval(d, Scope(fn.env, fn.before, outer=fn.outer))
        return local

    def _pyfunc(self, v):
        """Our functions as Python callables (a sort key), so builtin methods can call back in."""
        if isinstance(v, (Function, Bound, _Builtin)):
            return lambda *a, **k: self.call(v, list(a), k)
        return v

    def _builtin(self, name: str, args: list, kwargs: dict, node):
        args = [a.value if isinstance(a, Constexpr) else a for a in args]
        if name == "isinstance":
            return self._isinstance(*args)
        if name in ("hasattr", "getattr"):
            try:
                value = self.attribute(args[0], args[1])
            except Raised:
                if name == "hasattr":
                    return False
                if len(args) > 2:
                    return args[2]
                raise
            return True if name == "hasattr" else value
        if name in ("id", "hash", "iter", "next", "type", "callable"):
            raise Refused(f"{name}() is not evaluated")
        if name == "len" and isinstance(args[0], Class) and args[0].is_enum:
            return len(self._iterate(args[0]))
        if name in ("map", "filter"):
            fn, *its = args
            seqs = [self._iterate(i) for i in its]
            if name == "map":
                return [self.call(fn, list(items), {}, node) for items in zip(*seqs)]
            return [x for x in seqs[0] if self.truth(x if fn is None else self.call(fn, [x], {}, node))]
        if name == "range":
            r = range(*args)
            if len(r) > MAX_LEN:
                raise Refused(f"a range of more than {MAX_LEN} elements")
            return r
        if name == "pow" and len(args) == 2:
            return self.binop(operator.pow, args[0], args[1])
        if name in ("sorted", "min", "max") and "key" in kwargs:
            kwargs["key"] = self._pyfunc(kwargs["key"])
        if name == "zip":
            args = [self._iterate(a) for a in args]
        elif args and (name in _ITERATING or name in ("min", "max") and len(args) == 1) \
                and not isinstance(args[0], (str, bytes)):
            args[0] = self._iterate(args[0])
        for a in [*args, *kwargs.values()]:
            if not isinstance(a, (*_PLAIN, DType, Version, EnumMember)) and not callable(a):
                raise Refused(f"{name}() of {a!r}")
        import builtins
        try:
            value = getattr(builtins, name)(*args, **kwargs)
        except (TypeError, ValueError, KeyError, IndexError, OverflowError) as e:
            raise Raised(type(e).__name__, str(e)) from None
        if name in ("enumerate", "zip", "reversed"):
            value = list(value)
        return _check_size(value)

    def _isinstance(self, value, kinds) -> bool:
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        pytypes = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple,
                   "dict": dict, "set": set}
        for k in kinds:
            if isinstance(k, _Builtin) and k.name in pytypes:
                if isinstance(value, pytypes[k.name]):
                    return True
            elif isinstance(k, Class):
                if isinstance(value, EnumMember) and value.cls_name == k.name:
                    return True
            else:
                raise Refused(f"isinstance against {k!r}")
        return False

    def _external_call(self, dotted: str, args: list, kwargs: dict):
        dev = self.device
        if dotted in _IDENTITY_DECORATORS:
            if args and not kwargs and len(args) == 1 and isinstance(args[0], (Function, Class)):
                return args[0]
            return External(dotted)  # `lru_cache(maxsize=1)` -> the decorator
        if dotted in _IGNORED_CALLS:
            return None
        if dotted == "logging.getLogger":
            return Opaque("logger")
        if dotted.startswith("math.") and dotted[5:] in _MATH_FUNCS:
            for a in args:
                self._plain(a)
            if dotted == "math.factorial" or (dotted == "math.comb" and args and args[0] > 1000):
                raise Refused(f"{dotted} of large values")
            try:
                return _check_size(getattr(math, dotted[5:])(*args, **kwargs))
            except (ValueError, TypeError, OverflowError) as e:
                raise Raised(type(e).__name__, str(e)) from None
        if dotted.startswith("operator.") and dotted[9:] in _OPERATOR_FUNCS:
            for a in args:
                if not isinstance(a, Version):
                    self._plain(a)
            return getattr(operator, dotted[9:])(*args)
        if dotted in ("itertools.product", "itertools.chain", "itertools.combinations", "itertools.permutations",
                      "itertools.chain.from_iterable", "itertools.accumulate", "itertools.islice"):
            seqs = [self._iterate(a) if not isinstance(a, int) else a for a in args]
            fn = {"itertools.chain.from_iterable": lambda s: itertools.chain.from_iterable(s)}.get(
                dotted, getattr(itertools, dotted.split(".")[-1], None))
            size = math.prod(len(s) for s in seqs if isinstance(s, list)) if dotted == "itertools.product" else 0
            if size > MAX_LEN:
                raise Refused(f"{dotted} of more than {MAX_LEN} elements")
            try:
                return _check_size([tuple(x) if isinstance(x, tuple) else x for x in itertools.islice(
                    fn(*seqs, **kwargs), MAX_LEN + 1)])
            except TypeError as e:
                raise Raised("TypeError", str(e)) from None
        if dotted == "functools.partial":
            return _Partial(args[0], tuple(args[1:]), kwargs)
        if dotted == "functools.reduce":
            fn, seq, *init = args
            items = self._iterate(seq)
            acc = init[0] if init else items.pop(0)
            for x in items:
                acc = self.call(fn, [acc, x], {})
            return acc
        if dotted in ("os.getenv", "os.environ.get"):
            return args[1] if len(args) > 1 else kwargs.get("default")
        if dotted == "platform.machine":
            return "x86_64"
        if dotted == "platform.system":
            return "Linux"
        if dotted in ("packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version",
                      "distutils.version.LooseVersion"):
            return parse_version(args[0])
        if dotted.rsplit(".", 1)[-1] in ("Version", "parse_version", "version_parse") and len(args) == 1 \
                and isinstance(args[0], str) and not kwargs:
            # another package's wrapper around packaging's Version (unsloth_zoo.utils.Version)
            self.assumptions.append(f"{dotted}({args[0]!r}): assumed it parses a version like packaging's Version")
            return parse_version(args[0])
        if dotted in ("importlib.util.find_spec",) and args and isinstance(args[0], str):
            if args[0] == "triton" or args[0].startswith("triton."):
                return External(args[0]) if _triton_module_exists(args[0], quiet=True) else None
            raise Refused(f"whether {args[0]} is installed on the reviewer's machine")
        # triton: configs, helpers and what the driver would say about the target
        if dotted == "triton.Config" or dotted == "triton.runtime.autotuner.Config" or dotted == "triton.runtime.Config":
            return _config(args, kwargs)
        if dotted in ("triton.cdiv", "triton.language.cdiv"):
            a, b = args
            return -(-a // b)
        if dotted in ("triton.next_power_of_2", "triton.language.next_power_of_2"):
            n = args[0]
            self._plain(n)
            return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
        if dotted in ("triton.language.constexpr", "triton.language.core.constexpr"):
            value = args[0] if args else None
            return value if isinstance(value, Constexpr) else Constexpr(value)
        if dotted == "triton.runtime.driver.active.get_current_target":
            return Target("cuda", dev.cc, 32)
        if dotted in ("triton.runtime.driver.active.get_current_device", "torch.cuda.current_device"):
            return 0
        if dotted == "triton.runtime.driver.active.utils.get_device_properties":
            return dev.triton_properties()
        if dotted in ("torch.cuda.is_available", "torch.cuda.is_initialized"):
            return True
        if dotted == "torch.cuda.is_bf16_supported":
            return dev.cc >= 80
        if dotted == "torch.cuda.device_count":
            return 1
        if dotted == "torch.cuda.get_device_capability":
            return (dev.cc // 10, dev.cc % 10)
        if dotted == "torch.cuda.get_device_name":
            return dev.name
        if dotted == "torch.cuda.get_device_properties":
            return _Props("device properties", dev.torch_properties())
        if dotted in ("torch.xpu.is_available", "torch.npu.is_available", "torch.mps.is_available",
                      "torch.backends.mps.is_available"):
            return False
        if dotted == "importlib.import_module" and args and isinstance(args[0], str):
            return self.module_value(args[0])
        raise Refused(f"calling {dotted}, which is host code", host_call=True)


@dataclass(frozen=True)
class _Partial:
    fn: object
    args: tuple
    kwargs: dict = field(default_factory=dict, hash=False)


class _Props:
    """A read-only record of answers (device properties, an empty environment)."""

    def __init__(self, what: str, values: dict):
        self.what, self.values = what, values

    def attr(self, name: str):
        if name in self.values:
            return self.values[name]
        if self.what == "os.environ" and name in ("get",):
            return External("os.environ.get")
        raise Raised("AttributeError", f"{self.what} has no {name!r}")

    def item(self, key):
        if key in self.values:
            return self.values[key]
        raise Raised("KeyError", repr(key))

    def __repr__(self) -> str:
        return f"<{self.what}>"


def _config(args: list, kwargs: dict) -> TritonConfig:
    kw = args[0] if args else kwargs.pop("kwargs", {})
    if not isinstance(kw, dict):
        raise Refused("triton.Config with kwargs that are not a dict")
    names = ("num_warps", "num_stages", "num_ctas", "maxnreg")
    rest = dict(zip(names, args[1:]))
    for k, v in kwargs.items():
        if k in names:
            rest[k] = v
        elif k not in ("pre_hook", "ir_override"):
            raise Raised("TypeError", f"triton.Config got an unexpected argument {k!r}")
    values = {k: (v.value if isinstance(v, Constexpr) else v) for k, v in kw.items()}
    for k, v in values.items():
        if not isinstance(v, (int, float, str, bool, type(None), DType, tuple)):
            raise Refused(f"triton.Config value {k}={v!r}")
    return TritonConfig(tuple(values.items()), rest.get("num_warps") or 4,
                        rest.get("num_stages") if rest.get("num_stages") is not None else 3,
                        rest.get("num_ctas") or 1, rest.get("maxnreg"))


DTYPE_QUESTIONS = {"primitive_bitwidth", "is_fp8", "is_fp16", "is_bf16", "is_fp32", "is_fp64", "is_int", "is_bool",
                   "is_floating", "is_int_signed", "is_int_unsigned", "is_int1", "is_int8", "is_int16", "is_int32",
                   "is_int64", "is_uint8", "is_uint16", "is_uint32", "is_uint64", "is_standard_floating",
                   "fp_mantissa_width", "int_bitwidth", "exponent_bias"}


class _DTypeQuestion:
    """A bound method of a triton dtype (`x.is_bf16`): triton's own pure code, called here."""

    def __init__(self, method):
        self.method = method

    def __repr__(self) -> str:
        return f"<{self.method.__name__}>"


def from_triton(value):
    """A value triton hands over (a dtype, a constexpr) as the evaluator's own."""
    try:
        import triton.language as tl
    except ImportError:  # pragma: no cover
        return value
    if isinstance(value, tl.constexpr):
        return from_triton(value.value)
    if isinstance(value, tl.dtype):
        for name in _DTYPES:
            if getattr(tl, name, None) == value:
                return DType(name)
    if isinstance(value, (tuple, list)):
        return type(value)(from_triton(v) for v in value)
    return value


def _triton_module_exists(dotted: str, quiet: bool = False) -> bool:
    """Import one of triton's own modules (the tool's, never the repository's) to see it exists."""
    import importlib

    try:
        importlib.import_module(dotted)
        return True
    except ImportError:
        if quiet:
            return False
        raise Raised("ModuleNotFoundError", f"No module named {dotted!r}") from None


def real_object(dotted: str):
    """One of triton's (or math's) own objects, by dotted name: the tool's code, never the
    repository's. A missing module or attribute raises as Python would (`Raised`)."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                raise Raised("AttributeError", f"module {'.'.join(parts[:i])!r} has no attribute {attr!r}")
            obj = getattr(obj, attr)
        return obj
    raise Raised("ModuleNotFoundError", f"No module named {parts[0]!r}")


def _as_load(target: ast.expr) -> ast.expr:
    node = ast.fix_missing_locations(ast.parse(ast.unparse(target), mode="eval").body)
    ast.copy_location(node, target)
    return node
