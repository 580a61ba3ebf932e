"""What the repository's own launch sites (`kernel[grid](...)`) say about a kernel's arguments.

Read from the AST of the host code, never run: a literal or module constant passed for a
constexpr is its value; `None` passed for a pointer makes it an optional argument; a float
literal, `float(x)`, a wrapper parameter whose default is a float make a scalar `fp32`;
`x.stride(0)`, `x.numel()`, `len(...)` make it an integer; `num_warps=`/`num_stages=` literals
are the launch options. Where launch sites disagree, every value they pass is kept.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ptxdiff.discovery.caps import UNBOUNDED, launch_range
from ptxdiff.source.syntax import last_name, literal, walk
from ptxdiff.strenum import StrEnum

INT_METHODS = {"stride", "size", "numel", "dim", "element_size", "nelement", "data_ptr"}
INT_CALLS = {"len", "int", "cdiv", "next_power_of_2", "min", "max", "prod"}
TENSOR_CASTS = {"float": "*fp32", "half": "*fp16", "bfloat16": "*bf16", "double": "*fp64"}  # x.float(): a tensor


# the host function around a launch site (`async def` too)
HostFunction = ast.FunctionDef | ast.AsyncFunctionDef


class FactKind(StrEnum):
    """What a launch site says of one argument (stored discoveries spell it so)."""

    VALUE = "value"    # a value
    TYPE = "type"      # a runtime type: an expression of that type is passed
    NONE = "none"      # None passed
    EXPR = "expr"      # an expression offline reading cannot tell (its value: None, or the range the host code's caps give)


@dataclass(frozen=True)
class Fact:
    """One argument at one launch site: what it is (`kind`) and its value, type or None."""

    kind: FactKind
    value: object
    site: str = field(default="", compare=False)   # "path:line" of the launch site that says it


def launch_calls(tree: ast.Module) -> list[tuple[str, ast.Call, HostFunction | None]]:
    """Every `x[grid](...)` call of a module, with the callee's last name and the function
    around it (None at module level)."""
    out: list[tuple[str, ast.Call, HostFunction | None]] = []

    def visit(node: ast.AST, fn: HostFunction | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child)
                continue
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Subscript):
                name = last_name(child.func.value)
                if name:
                    out.append((name, child, fn))
            elif isinstance(child, ast.Call) and last_name(child.func) == "partial" and child.args \
                    and isinstance(child.args[0], ast.Subscript) and last_name(child.args[0].value):
                out.append((last_name(child.args[0].value), _partial_launch(child), fn))
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and fn is not None:
                bound = assignments(fn, child.func.id)   # `launch = k[grid]` ... `launch(x, FLAG=True)`
                if len(bound) == 1 and isinstance(bound[0], ast.Subscript) and last_name(bound[0].value):
                    out.append((last_name(bound[0].value), ast.copy_location(
                        ast.Call(func=bound[0], args=child.args, keywords=child.keywords), child), fn))
            visit(child, fn)
    visit(tree, None)
    return out


# what a `**kwargs` or `*args` that cannot be read stands for: any constexpr it may pass
UNREAD_REST = "<unread>"


def _partial_launch(call: ast.Call) -> ast.Call:
    """`functools.partial(k[grid], x, FLAG=True)` as the launch `k[grid](x, FLAG=True, **rest)`:
    what the later call passes is not read, so every constexpr the partial leaves open is a value
    the site may pass (`**rest`)."""
    assert isinstance(call.args[0], ast.Subscript)
    rest = ast.keyword(arg=None, value=ast.Name(id=UNREAD_REST, ctx=ast.Load()))
    return ast.copy_location(ast.Call(func=call.args[0], args=list(call.args[1:]),
                                      keywords=[*call.keywords, rest]), call)


def assignments(fn: HostFunction | None, name: str) -> list[ast.expr | None]:
    """Values assigned to a local of `fn` (None for a binding we cannot read: a loop, a tuple)."""
    return _all_assignments(fn).get(name, []) if fn is not None else []


@functools.lru_cache(maxsize=64)
def _all_assignments(fn: HostFunction) -> dict[str, list[ast.expr | None]]:
    found: dict[str, list[ast.expr | None]] = {}
    for node in walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, []).append(node.value)
                else:
                    for n in walk(t):
                        if isinstance(n, ast.Name):
                            found.setdefault(n.id, []).append(None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            for n in walk(node.target):
                if isinstance(n, ast.Name):
                    found.setdefault(n.id, []).append(None)
    return found


def _param_default(fn: HostFunction | None, name: str) -> tuple[bool, ast.expr | None]:
    if fn is None:
        return False, None
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    params = {p.arg for p in [*positional, *a.kwonlyargs]}
    return name in params, defaults.get(name)


def classify(expr: ast.expr, fn: HostFunction | None, consts: Mapping[str, object], depth: int = 0) -> Fact | None:
    """What one argument expression says, or None when it says nothing we can use."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Constant) and expr.value is None:
        return Fact(FactKind.NONE, None)
    ok, value = literal(expr, consts)
    if ok and isinstance(value, (bool, int, float, str)):
        return Fact(FactKind.VALUE, value)
    if isinstance(expr, ast.Name):
        assigned = assignments(fn, expr.id)
        is_param, default = _param_default(fn, expr.id)
        if is_param:
            if assigned or default is None:
                return None
            fact = classify(default, None, consts, depth + 1)
            return Fact(FactKind.TYPE, _type_of(fact.value)) if fact and fact.kind == FactKind.VALUE else None
        if len(assigned) == 1 and assigned[0] is not None:
            return classify(assigned[0], fn, consts, depth + 1)
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("tl", "torch") \
            and expr.attr[:1].isalpha():
        return Fact(FactKind.VALUE, f"tl.{expr.attr}") if expr.attr.startswith(("float", "bfloat", "int", "uint")) else None
    if isinstance(expr, ast.Call):
        f = expr.func
        name = last_name(f)
        if isinstance(f, ast.Name) and name == "float":
            return Fact(FactKind.TYPE, "fp32")
        if isinstance(f, ast.Attribute) and name in TENSOR_CASTS and not expr.args:
            return Fact(FactKind.TYPE, TENSOR_CASTS[name])
        if isinstance(f, ast.Attribute) and name in INT_METHODS or name in INT_CALLS:
            return Fact(FactKind.TYPE, "i32")
        return None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
        return Fact(FactKind.TYPE, "i32")
    if isinstance(expr, ast.IfExp):
        a, b = classify(expr.body, fn, consts, depth + 1), classify(expr.orelse, fn, consts, depth + 1)
        if a and b and a.kind == b.kind == FactKind.TYPE and a.value == b.value:
            return a
        if a and b and {a.kind, b.kind} <= {FactKind.TYPE, FactKind.VALUE}:
            ta = a.value if a.kind == FactKind.TYPE else _type_of(a.value)
            tb = b.value if b.kind == FactKind.TYPE else _type_of(b.value)
            return Fact(FactKind.TYPE, ta) if ta == tb else None
        return None
    if isinstance(expr, ast.BinOp):
        a, b = classify(expr.left, fn, consts, depth + 1), classify(expr.right, fn, consts, depth + 1)
        if a is None or b is None:   # `1.0 / absmax` of a tensor is a tensor: an unknown side says nothing
            return None
        types = {(x.value if x.kind == FactKind.TYPE else _type_of(x.value)) for x in (a, b) if x and x.kind != FactKind.NONE}
        if types == {"i32"} and not isinstance(expr.op, ast.Div):
            return Fact(FactKind.TYPE, "i32")
        if "fp32" in types:
            return Fact(FactKind.TYPE, "fp32")
        return None
    return None


def _type_of(value: object) -> str | None:
    if isinstance(value, bool):
        return "u1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def arguments(call: ast.Call, params: list[str]) -> dict[str, ast.expr]:
    """Argument expressions by parameter name (`**kwargs` and `*args` are not followed)."""
    out: dict[str, ast.expr] = {}
    for p, a in zip(params, call.args):
        if isinstance(a, ast.Starred):
            break
        out[p] = a
    for k in call.keywords:
        if k.arg is not None:
            out[k.arg] = k.value
    return out


# keywords a launch takes that are no parameter of the kernel (triton's launch and compile options)
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid", "warmup",
                            "stream", "device", "debug", "launch_cooperative_grid", "launch_pdl"})


def binds(call: ast.Call, fn: HostFunction | None, consts: Mapping[str, object], kernel: ast.FunctionDef,
          constexprs: frozenset[str]) -> bool:
    """Whether a launch's arguments can bind to the kernel's parameters as Python binds a call: no
    more positional arguments than parameters, and each runtime parameter without a default given
    (a constexpr may come from autotune or heuristics; a `**kwargs` offline reading can tell gives
    its keys). A launch left stale by a change of the signature (flashattention2-custom-mask's
    `_attn_fwd[grid](q, k, v, sm_scale, M, o, ...)` after a `mask` went in before `sm_scale`) fails
    where it runs, and what it passes by position lands on other parameters (`o` on `M`, a stride
    on `Out`): it says nothing of them. A `*args`, a `**kwargs` it cannot read, or a keyword written
    at the call that names no parameter nor option (a misspelt name, which explains what is
    missing) counts as binding."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return True
    named = {k.arg for k in call.keywords if k.arg is not None}
    given = set(named)
    for spread in (k.value for k in call.keywords if k.arg is None):
        for alt in _alternatives(spread, fn, consts):
            entries = _entries(alt, fn, consts)
            if entries is None:
                return True
            given |= set(entries)
    names = [a.arg for a in kernel.args.args]
    if len(call.args) > len(names):
        return False
    if named - set(names) - LAUNCH_OPTIONS:   # lightllm's `siliding_window=`: a typo, which explains
        return True                           # what is missing; its positions still line up
    given |= set(names[:len(call.args)])
    defaulted = set(names[len(names) - len(kernel.args.defaults):]) if kernel.args.defaults else set()
    return all(n in given or n in defaulted or n in constexprs for n in names)


def facts(call: ast.Call, fn: HostFunction | None, params: list[str], consts: Mapping[str, object],
          site: str = "", constexprs: frozenset[str] = frozenset()) -> dict[str, Fact]:
    """What one launch site (at `site`, "path:line") says, by parameter (and `num_warps`/`num_stages`).
    A constexpr passed an expression that cannot be read is an `expr` fact: the site passes
    something (its default, if any, is not what runs), we cannot tell what."""
    out = {}
    for name, expr in arguments(call, params).items():
        fact = _fact(expr, fn, consts, name in constexprs)
        if fact is not None:
            out[name] = replace(fact, site=site)
    return out


MAX_ALTERNATIVES = 16   # ways one launch site may launch that are kept (a conditional, dicts)


def site_facts(call: ast.Call, fn: HostFunction | None, params: list[str], consts: Mapping[str, object], site: str = "",
               constexprs: frozenset[str] = frozenset()) -> list[dict[str, Fact]]:
    """What one launch site says, as one dict (`facts`) per way it may launch: a value behind a
    conditional (`1024 if n > 4096 else 256`, a local assigned in each branch), an entry of a
    module dict (`MODES["fast"]`, every entry where the key is not a constant), `**CFG` of a dict
    offline reading can tell (a literal, `dict(FLAG=True)`, a module constant) give each of their
    values. A `**kwargs` or `*args` it cannot tell may pass any constexpr not passed by name: each
    is an `expr` fact (the default, if any, may not be what runs)."""
    explicit = arguments(call, params)
    spreads = [k.value for k in call.keywords if k.arg is None]
    rest = any(isinstance(a, ast.Starred) for a in call.args)
    ways: list[dict[str, ast.expr]] = [{}]
    for spread in spreads:
        dicts = [_entries(alt, fn, consts) for alt in _alternatives(spread, fn, consts)]
        if any(d is None for d in dicts):
            rest = True
            continue
        ways = [{**way, **{k: v for k, v in d.items() if k in params}} for way in ways for d in dicts if d is not None]
        ways = ways[:MAX_ALTERNATIVES]
    out: list[dict[str, Fact]] = []
    for way in ways:
        given = {**way, **explicit}
        options = {name: [_fact(alt, fn, consts, name in constexprs) for alt in _alternatives(expr, fn, consts)]
                   for name, expr in given.items()}
        if rest:
            options.update({name: [Fact(FactKind.EXPR, None)] for name in sorted(constexprs) if name not in given})
        widest = max((len(v) for v in options.values()), default=1)
        for i in range(min(widest, MAX_ALTERNATIVES)):
            out.append({name: replace(fact, site=site) for name, alts in options.items()
                        for fact in [alts[i % len(alts)]] if fact is not None})
    return out


def _fact(expr: ast.expr, fn: HostFunction | None, consts: Mapping[str, object], constexpr: bool) -> Fact | None:
    """What a site passes for one argument; for a constexpr it computes (`min(K, 16)`), its value where
    the host code's caps fix it, else an `expr` fact carrying the range they give (caps.py)."""
    fact = classify(expr, fn, consts)
    if not constexpr or fact is not None and fact.kind != FactKind.TYPE:
        return fact
    lo, hi = launch_range(expr, fn, consts)
    if lo is not None and lo == hi:
        return Fact(FactKind.VALUE, lo)
    if (lo, hi) != UNBOUNDED:
        return Fact(FactKind.EXPR, (lo, hi))
    return fact or Fact(FactKind.EXPR, None)


def _alternatives(expr: ast.expr, fn: HostFunction | None, consts: Mapping[str, object], depth: int = 0) -> list[ast.expr]:
    """The expressions `expr` may be at the launch: both arms of `a if c else b`, each value of
    a local assigned more than once (each readable), the entry of a module dict that a constant
    key picks (every entry where the key is not a constant); `expr` itself otherwise."""
    if depth > 4:
        return [expr]
    out: list[ast.expr] = [expr]
    if isinstance(expr, ast.IfExp):
        out = [*_alternatives(expr.body, fn, consts, depth + 1), *_alternatives(expr.orelse, fn, consts, depth + 1)]
    elif isinstance(expr, ast.Name) and fn is not None and not _param_default(fn, expr.id)[0]:
        assigned = assignments(fn, expr.id)
        if assigned and all(a is not None for a in assigned) and \
                (len(assigned) > 1 or isinstance(assigned[0], (ast.IfExp, ast.Subscript))):
            out = [x for a in assigned if a is not None for x in _alternatives(a, fn, consts, depth + 1)]
    elif isinstance(expr, ast.Subscript):
        ok, key = literal(expr.slice, consts)
        picked: list[ast.expr] = []
        for base in _alternatives(expr.value, fn, consts, depth + 1):   # `MODES[mode]["FLAG"]`
            entries = _entries(base, fn, consts, depth + 1)
            if entries is None or ok and (not isinstance(key, str) or key not in entries):
                return out
            picked += [entries[key]] if ok and isinstance(key, str) else list(entries.values())
        out = [x for v in picked for x in _alternatives(v, fn, consts, depth + 1)]
    return out[:MAX_ALTERNATIVES]


def _entries(expr: ast.expr, fn: HostFunction | None, consts: Mapping[str, object], depth: int = 0) -> dict[str, ast.expr] | None:
    """The entries of a dict offline reading can tell, by key: a literal with constant string
    keys, `dict(K=v)`, a local bound once to one, a module dict (`module_dicts`), the entry of
    one of these a constant key picks. None otherwise."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Dict):
        keys = [literal(k, consts) if k is not None else (False, None) for k in expr.keys]
        if all(ok and isinstance(k, str) for ok, k in keys):
            return {str(k): v for (_, k), v in zip(keys, expr.values)}
        return None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict" and not expr.args:
        if all(k.arg is not None for k in expr.keywords):
            return {k.arg: k.value for k in expr.keywords if k.arg is not None}
        return None
    if isinstance(expr, ast.Name):
        is_param = fn is not None and _param_default(fn, expr.id)[0]
        assigned = assignments(fn, expr.id)
        if not is_param and len(assigned) == 1 and assigned[0] is not None:
            return _entries(assigned[0], fn, consts, depth + 1)
        node = consts.get(expr.id) if not is_param and not assigned else None
        return _entries(node, None, consts, depth + 1) if isinstance(node, (ast.Dict, ast.Call)) else None
    if isinstance(expr, ast.Subscript):
        outer = _entries(expr.value, fn, consts, depth + 1)
        ok, key = literal(expr.slice, consts)
        if outer is not None and ok and isinstance(key, str) and key in outer:
            return _entries(outer[key], None if fn is None else fn, consts, depth + 1)
    return None


_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def module_dicts(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound once to a dict literal or `dict(...)` that nothing in the module
    changes (`CFG["FLAG"] = x`, `CFG.update(...)`, `del CFG[k]`, augmented or bound again)."""
    bound: dict[str, list[ast.expr]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            bound.setdefault(stmt.target.id, []).append(stmt.value)
    out: dict[str, ast.expr] = {name: values[0] for name, values in bound.items() if len(values) == 1 and (
        isinstance(values[0], ast.Dict) or isinstance(values[0], ast.Call) and isinstance(values[0].func, ast.Name)
        and values[0].func.id == "dict")}
    if not out:
        return out
    changed: set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)) \
                or isinstance(node, ast.Attribute) and node.attr in _MUTATORS:
            changed |= {n.id for n in walk(node.value) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            changed |= set(node.names)
        elif isinstance(node, ast.AugAssign):
            changed |= {n.id for n in walk(node.target) if isinstance(n, ast.Name)}
    return {k: v for k, v in out.items() if k not in changed}


def passed_alike(calls: list[ast.Call], params: list[str], constexprs: frozenset[str]) -> tuple[tuple[str, ...], ...]:
    """Constexprs every launch site passes one expression (`BLOCK_M=BLOCK, BLOCK_N=BLOCK`): they
    hold one value at every launch, so their values are compiled together, never crossed (a
    crossed pair is no launch, and often no shape the kernel takes). Groups of two or more, sorted."""
    if not calls:
        return ()
    per_site = [{name: ast.dump(expr) for name, expr in arguments(call, params).items() if name in constexprs}
                for call in calls]
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in sorted(per_site[0]):   # the same expression at every site, of every name of a group
        groups.setdefault(tuple(site.get(name, "") for site in per_site), []).append(name)
    return tuple(sorted(tuple(names) for key, names in groups.items() if len(names) > 1 and all(key)))


def merge(sites: list[dict[str, Fact]], constexprs: frozenset[str] = frozenset()) -> dict[str, tuple[Fact, ...]]:
    """Facts every launch site agrees on kind for; distinct values kept in order. A constexpr
    that some sites pass and others leave to its default is an `expr` fact beside the values
    passed: its default and what the sites pass are compiled (specs/plan.py)."""
    merged: dict[str, list[Fact]] = {}
    names = set().union(*(s.keys() for s in sites)) if sites else set()
    for name in sorted(names):
        if any(name not in s for s in sites):
            if name in constexprs:
                merged[name] = list(dict.fromkeys([*(s[name] for s in sites if name in s), Fact(FactKind.EXPR, None)]))
            continue
        got = [s[name] for s in sites]
        kinds = {g.kind for g in got}
        if kinds == {FactKind.TYPE} and len({g.value for g in got}) > 1:
            continue
        distinct = list(dict.fromkeys(got))
        merged[name] = distinct
    return {k: tuple(v) for k, v in merged.items()}
