"""What a kernel's own source says about the values it is not given (zero configuration).

A constexpr without a default gets its value from the host wrapper at launch; offline we have
to choose one. The choice is read from how the kernel uses the parameter, never from its name
alone where use says more: a `tl.arange` bound or a block shape is a power of two, a parameter
tested by `if` is a flag (compiled both ways), one compared with constants takes those
constants and one that matches none (every branch it selects is compiled), one used as a dtype
is a dtype. These are guesses, always shown as guesses; the
same rules on both sides of a comparison give the same values, so deltas stay meaningful.
Pure AST work: nothing is imported or evaluated.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import cast

from ptxdiff.source.syntax import is_constexpr, last_name, literal, single_assignment, walk

SHAPE_CALLS = {"zeros", "full", "empty", "reshape", "view", "broadcast_to", "expand_dims", "make_block_ptr",
               "make_tensor_descriptor", "zeros_like", "full_like", "permute", "trans"}
LOOP_CALLS = {"range", "static_range"}
FLAG_NAME = re.compile(r"^(HAS|IS|USE|ENABLE|DO|WITH|SAVE|STORE|RETURN|APPLY|REVERSE|NEED|ADD|FUSE|EVEN|CAUSAL|"
                       r"TRANS|OUTPUT|COMPUTE|INPLACE|SKIP|LOAD|ACC|ATOMIC)(_|$)", re.IGNORECASE)
BLOCK_NAME = re.compile(r"BLOCK|TILE|^B[A-Z]{1,2}$|_SIZE$|^SIZE|CHUNK", re.IGNORECASE)
ONE_BLOCK = 1024      # a lone block size: a row kernel (one program per row)
MANY_BLOCKS = 64      # tiles: several block sizes of one kernel, each 64
LOOP_COUNT = 2
SOME_INT = 64         # a dimension (head size, number of heads...): big enough for tl.dot's minimum of 16
SMALL_INT = 4
SMALL_NAME = re.compile(r"STAGE|WARP|GROUP|FACTOR|SPLIT|^NUM_|_NUM$|^N_[A-Z]", re.IGNORECASE)
STRIDE_NAME = re.compile(r"stride", re.IGNORECASE)   # a stride that is a constexpr: specialised on contiguity
SOME_FLOAT = 1e-6     # eps, scale, offset...: a small float that folds into no special case (0, 1)


@dataclass(frozen=True)
class Hint:
    """Candidate values for one constexpr, and what in the source suggested them."""

    values: tuple[object, ...]
    why: str
    branches: bool = False    # the values select branches (compared with literals): both sides' are united


def unmatched(values: tuple[object, ...], block: bool = False) -> object:
    """A value of the kind of `values` that equals none of them: the branch no comparison selects.
    A size stays a power of two (it may bound an arange)."""
    if all(isinstance(v, bool) for v in values):
        return next((b for b in (False, True) if b not in values), None)
    if all(isinstance(v, str) for v in values):
        return next(c for c in ("", "_", "__") if c not in values)
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        if any(isinstance(v, float) for v in values):
            return next(c for c in (SOME_FLOAT, 2 * SOME_FLOAT, 4 * SOME_FLOAT) if c not in values)
        sizes = (MANY_BLOCKS, 2 * MANY_BLOCKS, MANY_BLOCKS // 2, ONE_BLOCK, 16)
        return next((c for c in sizes if c not in values), None if block else max(cast("tuple[int, ...]", values)) + 1)
    return None


def _branch_values(values: tuple[object, ...], block: bool = False) -> tuple[object, ...]:
    """Compared values and one that matches none of them."""
    other = unmatched(values, block)
    return values if other is None else (*values, other)


def _names(nodes: Iterable[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in walk(node) if isinstance(n, ast.Name)}


def module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level names bound once to a literal (or `tl.constexpr(literal)`)."""
    seen: dict[str, list[object]] = {}
    for stmt in tree.body:
        assigned = single_assignment(stmt)
        if assigned is None:
            continue
        target, value = assigned
        if isinstance(value, ast.Call) and last_name(value.func) == "constexpr" and len(value.args) == 1:
            value = value.args[0]
        ok, v = literal(value, {})
        seen.setdefault(target, []).append(v if ok and isinstance(v, (int, float, str, bool)) else ...)
    for stmt in tree.body:   # `class Mode: SUM = 0` (an enum of modes): `Mode.SUM` (issue 37)
        if isinstance(stmt, ast.ClassDef):
            for k, v in module_constants(ast.Module(body=stmt.body, type_ignores=[])).items():
                seen.setdefault(f"{stmt.name}.{k}", []).append(v)
    return {k: v[0] for k, v in seen.items() if len(v) == 1 and v[0] is not ...}


def constant(node: ast.expr, consts: Mapping[str, object]) -> tuple[bool, object]:
    """`literal`, and a class attribute of the module (`Mode.SUM`, `Mode.SUM.value`)."""
    if isinstance(node, ast.Attribute):
        chain = ".".join(n for n in _chain(node.value if node.attr == "value" else node))
        if chain in consts:
            return True, consts[chain]
    return literal(node, consts)


def _chain(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Attribute):
        return [*_chain(node.value), node.attr]
    return [node.id] if isinstance(node, ast.Name) else ["?"]


def module_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The module's top-level functions by name: the helpers a kernel may pass its constexprs to."""
    return {stmt.name: stmt for stmt in tree.body if isinstance(stmt, ast.FunctionDef)}


def constexpr_hints(fn: ast.FunctionDef, consts: Mapping[str, object], kinds: Mapping[str, str | None] | None = None,
                    helpers: dict[str, ast.FunctionDef] | None = None) -> dict[str, Hint]:
    """A guess for every constexpr parameter, used when nothing else gives its value. `kinds` are the
    types the parameters' use suggests (params.infer_param_kinds): a float stays a float. A
    constexpr passed on to one of `helpers` (the module's functions and the jit helpers it
    reaches in other modules) is used as the helper uses it and compared where the helper
    compares it (`if quant_policy == Q_POLICY_INT8:` inside `_fill_page`, `if ROUND:` a flag),
    and a block size is no smaller than what the kernel or a helper floor-divides it by
    (`BLOCK // 128`)."""
    kinds = kinds or {}
    # constexprs with a default get a hint too: a default the evaluator refuses needs one
    names = [a.arg for a in fn.args.args if is_constexpr(a.annotation)]
    uses, compared = _constexpr_uses(fn, names, consts)
    least = _divisors(fn, set(names))
    for helper, passed in _passed_on(fn, set(names), helpers or {}, 3):
        helper_uses, helper_compared = _constexpr_uses(helper, list(passed), consts)
        for inner, theirs in helper_compared.items():
            _add_compared(compared[passed[inner]], theirs)
        for inner, how in helper_uses.items():
            uses[passed[inner]] |= how
        for inner, d in _divisors(helper, set(passed)).items():
            least[passed[inner]] = max(least.get(passed[inner], 1), d)
    squares = _square_blocks(fn, set(names))
    blocks = [n for n in names if "block" in uses[n] or (not uses[n] and not compared[n] and BLOCK_NAME.search(n)
                                                       and not SMALL_NAME.search(n))]
    hints: dict[str, Hint] = {}
    domains = enum_domains(fn, set(names), consts)
    required = required_flags(fn, set(names))
    integral = integer_dtypes(fn, set(names))
    for n in names:
        u = uses[n]
        if n in required:
            hints[n] = Hint((required[n],), f"only `if {'' if required[n] else 'not '}{n}:` binds what the kernel reads "
                            "after it: triton compiles it that way only")
        elif "called" in u:   # `ACTIVATION(x)`: a jit function, which no launch here names
            hints[n] = Hint((None,), "a function the kernel calls (none: the kernel's path without it)")
        elif n in integral:
            hints[n] = Hint(("tl.int32",), "a dtype whose values the kernel puts through `//`, a shift or a bit "
                                           "operation, which take integers")
        elif "dtype" in u or n.lower().endswith("dtype"):
            hints[n] = Hint(("tl.float32",), "a dtype (the pointers' guessed element type)")
        elif (option := _option_values(u, compared[n])) is not None:
            hints[n] = Hint(option, "passed as " + ", ".join(sorted(x[len(OPTION):] for x in u if x.startswith(OPTION)))
                            + ": one of triton's values", bool(compared[n]))
        elif compared[n] and "block" not in u:
            if kinds.get(n) == "fp32":   # a float compared with `0`: compiled with floats
                compared[n] = list(dict.fromkeys(float(v) if type(v) is int else v for v in compared[n]))
            values = _branch_values(tuple(compared[n]))
            if "flag" in u and all(isinstance(v, bool) for v in values):
                values = (False, True)
            elif n in domains:   # compared with a module's enum: its constants, not a value none of them is
                values = tuple(dict.fromkeys([*domains[n], *(v for v in compared[n] if v not in domains[n])]))
            hints[n] = Hint(values, f"compared with {', '.join(repr(v) for v in compared[n])}; every branch", True)
        elif STRIDE_NAME.search(n) and "block" not in u and "flag" not in u:
            hints[n] = Hint((1,), "a stride (contiguous launches pass 1)")
        elif "flag" in u or FLAG_NAME.search(n) and "block" not in u and "loop" not in u:
            hints[n] = Hint((False, True), "a flag (compiled both ways)")
        elif kinds.get(n) == "fp32" and "block" not in u and not BLOCK_NAME.search(n):
            hints[n] = Hint((SOME_FLOAT,), "a float (from its use or name)")
        elif n in blocks and "unrolled" in u:
            hints[n] = Hint((SMALL_INT,), "a block size that also bounds an unrolled loop (small)")
        elif n in blocks and SMALL_NAME.search(n) and not BLOCK_NAME.search(n):
            # a count used as one side of a shape (`(BLOCK, HEAD_GROUPS, D)`): its name's size, not a block's
            hints[n] = Hint((SMALL_INT,), "a small count (its name) used in a shape")
        elif n in blocks:
            tile = re.search(r"(_|^B)[MNKTDHV]\d?$|^B[A-Z]$", n)  # BLOCK_M, BK, BT: one side of a tile
            value = ONE_BLOCK if len(blocks) == 1 and not tile and n not in squares else MANY_BLOCKS
            sizes = [v for v in compared[n] if isinstance(v, int) and not isinstance(v, bool)]
            if sizes:  # `if BLOCK == 1024:` selects a branch: each compared size, and one that matches none
                values = (value, *(v for v in sizes if v != value)) if value not in sizes else \
                    _branch_values(tuple(sizes), block=True)
                hints[n] = Hint(values, f"a block size compared with {', '.join(map(repr, sizes))}; every branch", True)
            elif least.get(n, 1) > value:   # `BLOCK // 128` in a shape: a smaller guess makes it 0
                size = 1 << (least[n] - 1).bit_length()
                hints[n] = Hint((size,), f"a block size (a power of two, divided by {least[n]})")
            else:
                hints[n] = Hint((value,), "a block size (a power of two)")
        elif "loop" in u:
            hints[n] = Hint((LOOP_COUNT,), "a loop count")
        elif SMALL_NAME.search(n):
            hints[n] = Hint((SMALL_INT,), "a small count (its name)")
        else:
            hints[n] = Hint((SOME_INT,), "an integer (a size: a power of two)")
    asserts, divided = asserted(fn, set(names), consts), divisors(fn, set(names))
    for helper, passed in _passed_on(fn, set(names), helpers or {}, 3):
        for inner, demanded in asserted(helper, set(passed), consts).items():
            asserts.setdefault(passed[inner], demanded)
        divided |= {passed[inner] for inner in divisors(helper, set(passed))}
    return {n: _evidence_hint(n, h, asserts, divided) for n, h in hints.items()}


def required_flags(fn: ast.FunctionDef, constexprs: set[str]) -> dict[str, bool]:
    """Constexpr flags the kernel compiles one way only (issue 37: a guess from its own code):
    `if FLAG:` binds a name that nothing before it and not its `else` binds, and a statement after
    it reads that name in compiled code (not under another constexpr `if` whose branches do not
    both read it): with FLAG false, triton raises a NameError (`desc_q`, made only `if ENABLE_TMA:`).
    A flag asked both ways is left out."""
    params = {a.arg for a in fn.args.args}
    found: dict[str, set[bool]] = {}

    def block(stmts: list[ast.stmt], bound: set[str]) -> None:
        for i, stmt in enumerate(stmts):
            test = stmt.test if isinstance(stmt, ast.If) else None
            negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
            flag = test.operand if isinstance(test, ast.UnaryOp) and negated else test
            if isinstance(stmt, ast.If) and isinstance(flag, ast.Name) and flag.id in constexprs:
                then, other = _stored(stmt.body), _stored(stmt.orelse)
                later = stmts[i + 1:]
                rebound = _stored(later)
                for names, truth in ((then - other - bound - rebound, not negated),
                                     (other - then - bound - rebound, negated)):
                    if any(_compiled_read(later, x, constexprs) for x in names):
                        found.setdefault(flag.id, set()).add(truth)
            for inner in (getattr(stmt, "body", None), getattr(stmt, "orelse", None)):
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    block(inner, bound)
            bound = bound | _stored([stmt])

    block(fn.body, set(params))
    return {flag: truths.pop() for flag, truths in found.items() if len(truths) == 1}


def _stored(stmts: list[ast.stmt]) -> set[str]:
    """Names the statements bind (at any depth)."""
    return {n.id for s in stmts for n in walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _compiled_read(stmts: list[ast.stmt], name: str, constexprs: set[str]) -> bool:
    """Whether triton compiles a read of `name` in these statements whatever the other constexprs
    are: under a constexpr `if`, only where both of its branches read it."""
    for stmt in stmts:
        if isinstance(stmt, ast.If) and {n.id for n in walk(stmt.test) if isinstance(n, ast.Name)} & constexprs:
            if _compiled_read(stmt.body, name, constexprs) and _compiled_read(stmt.orelse, name, constexprs):
                return True
            continue
        inner = [b for b in (getattr(stmt, "body", None), getattr(stmt, "orelse", None)) if isinstance(b, list)]
        parts = [n for field, value in ast.iter_fields(stmt) if field not in ("body", "orelse")
                 for v in (value if isinstance(value, list) else [value]) if isinstance(v, ast.AST) for n in walk(v)]
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in parts) or \
                any(_compiled_read(b, name, constexprs) for b in inner):
            return True
    return False


def _constexpr_uses(fn: ast.FunctionDef, names: list[str], consts: Mapping[str, object]
                    ) -> tuple[dict[str, set[str]], dict[str, list[object]]]:
    """How the kernel uses each constexpr ("block", "loop", "unrolled", "dtype", "flag", "called"),
    and the constants it is compared with by == or !=."""
    uses: dict[str, set[str]] = {n: set() for n in names}
    compared: dict[str, list[object]] = {n: [] for n in names}
    for node in walk(fn):
        if isinstance(node, ast.Call):
            _call_uses(node, uses)
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)) or isinstance(node, ast.UnaryOp) and \
                isinstance(node.op, ast.Not):
            test = node.test if not isinstance(node, ast.UnaryOp) else node.operand
            for part in (test.values if isinstance(test, ast.BoolOp) else [test]):
                if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
                    part = part.operand
                if isinstance(part, ast.Name) and part.id in uses:
                    uses[part.id].add("flag")
        elif isinstance(node, ast.BoolOp):
            for part in node.values:
                if isinstance(part, ast.Name) and part.id in uses:
                    uses[part.id].add("flag")
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            left, right = node.left, node.comparators[0]
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Name) and a.id in compared:
                    ok, v = constant(b, consts)
                    _add_compared(compared[a.id], [v] if ok else [])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ORDERED):
            left, right = node.left, node.comparators[0]
            for a, b, flipped in ((left, right, False), (right, left, True)):
                if isinstance(a, ast.Name) and a.id in compared:
                    ok, v = constant(b, consts)
                    found = compared[a.id]   # a value equal to one there already (0 and 0.0) selects alike
                    _add_compared(found, [b for b in boundary(node.ops[0], v, flipped) if b not in found] if ok else [])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(node.left, ast.Name) and node.left.id in compared:
            options = node.comparators[0]   # `MODE in ("a", "b")`
            if isinstance(options, (ast.Tuple, ast.List, ast.Set)):
                constants = [constant(e, consts) for e in options.elts]
                _add_compared(compared[node.left.id], [v for ok, v in constants if ok])
    return uses, compared


ORDERED = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
LARGEST_SIZE = 1 << 17   # a boundary's far side past this is not compiled (a size that large takes hours)


def boundary(op: ast.cmpop, value: object, flipped: bool = False) -> tuple[object, ...]:
    """The values on both sides of `X < value` (`<=`, `>`, `>=`; `flipped`: `value < X`): the value
    itself and its nearest neighbour on the other side, a power of two for a power of two (a size
    stays one: `BLOCK > 1024` compiles 1024 and 2048), else one more or one less."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ()
    below = isinstance(op, (ast.Lt, ast.GtE)) != flipped   # the boundary's other value is below it
    other: int | float
    if isinstance(value, int) and value >= 2 and value & (value - 1) == 0:
        other = value // 2 if below else value * 2
    else:
        other = value - 1 if below else value + 1
    return (value,) if isinstance(other, int) and other > LARGEST_SIZE else (value, other)


def _passed_on(fn: ast.FunctionDef, names: set[str], helpers: dict[str, ast.FunctionDef],
               depth: int) -> Iterator[tuple[ast.FunctionDef, dict[str, str]]]:
    """(helper, {its param: our name}) for each of `helpers` that `fn` passes some of `names` to
    unchanged (`helper(x, MODE)`, `helper(x, mode=MODE)`), through `depth` levels of calls."""
    if depth <= 0:
        return
    for call in (n for n in walk(fn) if isinstance(n, ast.Call)):
        helper = helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if helper is None or helper is fn:
            continue
        params = [a.arg for a in helper.args.args]
        passed = {params[i]: a.id for i, a in enumerate(call.args) if i < len(params) and isinstance(a, ast.Name)}
        passed.update({k.arg: v.id for k in call.keywords if k.arg and isinstance(v := k.value, ast.Name)})
        passed = {inner: outer for inner, outer in passed.items() if outer in names and inner in params}
        if passed:
            yield helper, passed
            for deeper, inner_passed in _passed_on(helper, set(passed), helpers, depth - 1):
                yield deeper, {p: passed[q] for p, q in inner_passed.items()}


# operators triton takes on integers only (`%` takes floats too; params.INTEGER_OPS adds it)
INTEGER_ONLY = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.FloorDiv)


def integer_dtypes(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """The dtype constexprs whose values an integer-only operator takes: Fast-LLM's
    `counts = tl.sum(hits.to(dtype), 0)`, then `(counts + pad - 1) // pad` (a float there fails:
    `unexpected type fp32`). Values are followed from `.to(D)` and `dtype=D` through the locals
    assigned from them."""
    def dtypes_in(expr: ast.AST, made: dict[str, set[str]]) -> set[str]:
        out: set[str] = set()
        for node in ast.walk(expr):
            if isinstance(node, ast.Call):
                cast_to = node.args[:1] if isinstance(node.func, ast.Attribute) and node.func.attr == "to" else []
                out |= {a.id for a in [*cast_to, *(k.value for k in node.keywords if k.arg == "dtype")]
                        if isinstance(a, ast.Name) and a.id in names}
            elif isinstance(node, ast.Name):
                out |= made.get(node.id, set())
        return out

    made: dict[str, set[str]] = {}
    assigns = [(t.id, node.value) for node in walk(fn) if isinstance(node, (ast.Assign, ast.AugAssign))
               for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]
    for _ in range(3):   # locals assigned from locals: a few steps reach what real kernels chain
        for target, value in assigns:
            made.setdefault(target, set()).update(dtypes_in(value, made))
    return {d for node in walk(fn) if isinstance(node, ast.BinOp) and isinstance(node.op, INTEGER_ONLY)
            for side in (node.left, node.right) for d in dtypes_in(side, made)}


def _divisors(fn: ast.FunctionDef, names: set[str]) -> dict[str, int]:
    """The largest literal each of `names` is floor-divided by (`BLOCK // 128`): a guess below it
    makes a shape of 0."""
    found: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and isinstance(node.left, ast.Name) \
                and node.left.id in names and isinstance(node.right, ast.Constant) \
                and type(node.right.value) is int and node.right.value > 1:
            found[node.left.id] = max(found.get(node.left.id, 1), node.right.value)
    return found


def _add_compared(found: list[object], values: list[object]) -> None:
    for v in values:
        if isinstance(v, (int, float, str, bool)) and not any(v == f and type(v) is type(f) for f in found):
            found.append(v)


def _call_uses(node: ast.Call, uses: dict[str, set[str]]) -> None:
    """What one call says of the constexprs among its arguments, and of one it calls."""
    if isinstance(node.func, ast.Name) and node.func.id in uses:
        uses[node.func.id].add("called")
    callee = last_name(node.func)
    if callee == "arange":
        for n in _names(node.args) & uses.keys():
            uses[n].add("block")
    elif callee in SHAPE_CALLS:
        shapes = [e for a in [*node.args, *(k.value for k in node.keywords)]
                  if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
        for n in _names(shapes) & uses.keys():
            uses[n].add("block")
    elif callee in LOOP_CALLS and len(node.args) == 1 and isinstance(node.args[0], ast.Name) \
            and node.args[0].id in uses:
        uses[node.args[0].id].add("loop")  # `range(N)`: a count; a bound with a step is a size
    if callee == "static_range" and len(node.args) <= 2:
        for n in _names(node.args) & uses.keys():
            # unrolled: `static_range(1, W)` with W a size compiles for hours, even when W is
            # also an arange bound (`tl.arange(0, n_blocks) == i`)
            uses[n] |= {"loop", "unrolled"}
    if callee in ("to", "cast") and node.args and isinstance(node.args[-1], ast.Name) and \
            node.args[-1].id in uses:
        uses[node.args[-1].id].add("dtype")
    for k in node.keywords:
        if k.arg == "dtype" and isinstance(k.value, ast.Name) and k.value.id in uses:
            uses[k.value.id].add("dtype")
        elif k.arg in OPTIONS and isinstance(k.value, ast.Name) and k.value.id in uses:
            uses[k.value.id].add(OPTION + k.arg)   # `input_precision=PREC`: one of triton's strings


# keyword arguments of triton's language that take one of a few values (the default first):
# a constexpr passed there is one of them, never a size (issue 37)
OPTIONS = {"input_precision": ("tf32", "ieee", "tf32x3"), "eviction_policy": ("", "evict_last", "evict_first"),
           "cache_modifier": ("", ".cg", ".ca", ".cs", ".wt", ".cv"), "padding_option": ("", "zero", "nan"),
           "sem": ("acq_rel", "acquire", "release", "relaxed"), "scope": ("gpu", "cta", "sys"),
           "fp_downcast_rounding": ("rtne", "rtz"), "allow_tf32": (True, False),
           # `tl.range`'s switches (a `WARP_SPECIALIZE` constexpr is a flag, not a count of warps)
           "warp_specialize": (False, True), "flatten": (False, True), "disallow_acc_multi_buffer": (False, True)}
OPTION = "option:"


def _option_values(used: set[str], compared: list[object]) -> tuple[object, ...] | None:
    """The values of a constexpr passed to one of OPTIONS: those of its allowed set it is compared
    with, and one it is not (the `else`), else the default."""
    allowed = next((OPTIONS[u[len(OPTION):]] for u in sorted(used) if u.startswith(OPTION)), None)
    if allowed is None:
        return None
    named = [v for v in compared if any(v == a and type(v) is type(a) for a in allowed)]
    other = next((a for a in allowed if a not in named), None)
    return tuple(named) + ((other,) if other is not None else ())


MAX_ENUM = 8


def enum_domains(fn: ast.FunctionDef, names: set[str], consts: Mapping[str, object]) -> dict[str, list[object]]:
    """Constexprs compared (`==`, `!=`) with a constant of a module's enum: a class's constants
    (`Mode.SUM`), or module constants of one prefix (`MODE_A = tl.constexpr(0)`, `MODE_B`): the
    enum's values are the values a launch passes (issue 37)."""
    found: dict[str, list[object]] = {}
    for node in walk(fn):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq))):
            continue
        for a, b in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
            key = ".".join(_chain(b)) if isinstance(b, ast.Attribute) else b.id if isinstance(b, ast.Name) else None
            if not (isinstance(a, ast.Name) and a.id in names and key in consts):
                continue
            assert key is not None
            prefix = key.rsplit(".", 1)[0] + "." if "." in key else key.rsplit("_", 1)[0] + "_" if "_" in key else None
            kind = type(consts[key])
            family = [v for k, v in consts.items() if prefix and k.startswith(prefix) and type(v) is kind
                      and ("." in k) == ("." in key) and "." not in k[len(prefix):]]
            if 1 < len(family) <= MAX_ENUM:
                _add_compared(found.setdefault(a.id, []), family)
    return found


def asserted(fn: ast.FunctionDef, names: set[str], consts: Mapping[str, object]) -> dict[str, list[object]]:
    """Values `tl.static_assert` demands of constexprs (`tl.static_assert(N == 4)`, `N in (2,
    4)`, joined by `and`): the kernel names them, and no other value compiles (issue 37)."""
    found: dict[str, list[object]] = {}
    for node in walk(fn):
        if not (isinstance(node, ast.Call) and last_name(node.func) == "static_assert" and node.args):
            continue
        test = node.args[0]
        for part in (test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]):
            if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
                continue
            left, right, op = part.left, part.comparators[0], part.ops[0]
            if isinstance(op, ast.Eq):
                for a, b in ((left, right), (right, left)):
                    ok, v = constant(b, consts)
                    if isinstance(a, ast.Name) and a.id in names and ok:
                        _add_compared(found.setdefault(a.id, []), [v])
            elif isinstance(op, ast.In) and isinstance(left, ast.Name) and left.id in names and \
                    isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                _add_compared(found.setdefault(left.id, []), [v for ok, v in (constant(e, consts) for e in right.elts)
                                                               if ok])
    return {n: v for n, v in found.items() if v}


def divisors(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """Constexprs the kernel divides by or takes a remainder of (`k % SAVE_EVERY`, `x // D`,
    `tl.cdiv(n, D)`) outside a test of their own (`if D > 0:`): a 0 or False there is a division
    by zero, which no launch makes and which crashes the compiler or folds the code away."""
    found: set[str] = set()

    def visit(node: ast.AST, tested: frozenset[str]) -> None:
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            inner = tested | _names([node.test])
            visit(node.test, tested)
            for child in [*(node.body if isinstance(node.body, list) else [node.body]),
                          *(node.orelse if isinstance(node.orelse, list) else [node.orelse])]:
                visit(child, inner)
            return
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.FloorDiv, ast.Div)) and \
                isinstance(node.right, ast.Name) and node.right.id in names and node.right.id not in tested:
            found.add(node.right.id)
        if isinstance(node, ast.Call) and last_name(node.func) == "cdiv" and len(node.args) == 2 and \
                isinstance(node.args[1], ast.Name) and node.args[1].id in names and node.args[1].id not in tested:
            found.add(node.args[1].id)
        for child in ast.iter_child_nodes(node):
            visit(child, tested)
    for stmt in fn.body:
        visit(stmt, frozenset())
    return found


def _evidence_hint(name: str, hint: Hint, asserts: dict[str, list[object]], divided: set[str]) -> Hint:
    """A hint corrected by what the kernel itself says (issue 37): a value `tl.static_assert`
    demands; a divisor never 0 nor False."""
    if name in asserts:
        return Hint(tuple(asserts[name]), f"asserted by tl.static_assert: {', '.join(map(repr, asserts[name]))}",
                    True)
    if name in divided and any(v == 0 for v in hint.values if isinstance(v, (int, float))):
        kept = tuple(v for v in hint.values if not (isinstance(v, (int, float)) and v == 0))
        if not kept or all(isinstance(v, bool) for v in kept):
            kept = (SMALL_INT,)
        return Hint(kept, f"{hint.why}; a divisor (never 0)", hint.branches)
    return hint


def _square_blocks(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """Block constexprs whose aranges are spread over two axes (`offs_m[:, None]`, `offs_n[None, :]`):
    one name on both sides of a tile holds B x B elements, so it is a tile side, not a row's 1024."""
    from_arange: dict[str, set[str]] = {}  # local -> the block names of the aranges its value holds
    for node in walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            blocks = {b for call in walk(node.value)
                      if isinstance(call, ast.Call) and last_name(call.func) == "arange"
                      for b in _names(call.args) & names}
            if blocks:
                from_arange.setdefault(node.targets[0].id, set()).update(blocks)
    axes: dict[str, set[int]] = {}
    for node in walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in from_arange \
                and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            nones = [i for i, e in enumerate(node.slice.elts) if isinstance(e, ast.Constant) and e.value is None]
            if len(nones) == 1:
                for b in from_arange[node.value.id]:
                    axes.setdefault(b, set()).add(1 - nones[0])
    return {b for b, seen in axes.items() if len(seen) == 2}


def optional_params(fn: ast.FunctionDef) -> frozenset[str]:
    """Runtime parameters the kernel or its heuristics test against None: the wrapper may pass
    None for them (an optional tensor), so both cases are worth compiling."""
    runtime = {a.arg for a in fn.args.args if not is_constexpr(a.annotation)}
    found: set[str] = set()
    for node in [*fn.decorator_list, *fn.body]:
        for sub in walk(node):
            if isinstance(sub, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in sub.ops) and any(
                    isinstance(c, ast.Constant) and c.value is None for c in [sub.left, *sub.comparators]):
                for side in [sub.left, *sub.comparators]:
                    if isinstance(side, ast.Name) and side.id in runtime:
                        found.add(side.id)
                    elif isinstance(side, ast.Subscript) and isinstance(side.slice, ast.Constant) and \
                            side.slice.value in runtime:
                        found.add(side.slice.value)  # a heuristic: args["bias"] is not None
    return frozenset(found)
