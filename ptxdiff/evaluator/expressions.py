"""Expressions of the interpreted code: one handler per expression type, picked from a table.

Every expression is counted (MAX_STEPS) and its nesting bounded, so no input makes the evaluator
loop or recurse without end; an expression type without a handler is refused with its line.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any, NoReturn, cast

from ptxdiff.evaluator.core import BINOPS, InterpCore, dispatch
from ptxdiff.evaluator.scope import Function, Scope
from ptxdiff.evaluator.sizes import check_spec, check_text
from ptxdiff.evaluator.values import MAX_LEN, Raised, Refused

_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}


class ExpressionsMixin(InterpCore):
    """Evaluates expressions: `eval`, comprehensions, the arguments of calls."""

    def eval(self, node: ast.expr, scope: Scope) -> Any:
        self.tick(node, scope.env)
        self.depth += 1
        try:
            if self.depth > 200:
                raise Refused("expression nested too deeply", self.where(scope.env, node))
            return _expression_handler(node)(self, node, scope)
        except Refused as e:
            if e.where is None:
                e.where = self.where(scope.env, node)
            raise
        except RecursionError:
            raise Refused("recursion too deep to interpret", self.where(scope.env, node)) from None
        finally:
            self.depth -= 1

    # -- one handler per expression type -----------------------------------------------------------
    def _eval_constant(self, node: ast.Constant, scope: Scope) -> Any:
        return node.value

    def _eval_name(self, node: ast.Name, scope: Scope) -> Any:
        return scope.lookup(node.id)

    def _eval_attribute(self, node: ast.Attribute, scope: Scope) -> Any:
        return self.attribute(self.eval(node.value, scope), node.attr)

    def _eval_binop(self, node: ast.BinOp, scope: Scope) -> Any:
        op = BINOPS.get(type(node.op))
        if op is None:
            raise Refused("this operator is not evaluated")
        return self.binop(op, self.eval(node.left, scope), self.eval(node.right, scope))

    def _eval_unaryop(self, node: ast.UnaryOp, scope: Scope) -> Any:
        v = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not self.truth(v)
        self.plain(v)
        try:
            return _UNARY[type(node.op)](v)
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None

    def _eval_boolop(self, node: ast.BoolOp, scope: Scope) -> Any:
        is_and = isinstance(node.op, ast.And)
        v = None
        for sub in node.values:
            v = self.eval(sub, scope)
            if self.truth(v) != is_and:
                return v
        return v

    def _eval_compare(self, node: ast.Compare, scope: Scope) -> bool:
        left = self.eval(node.left, scope)
        for op, comp in zip(node.ops, node.comparators):
            right = self.eval(comp, scope)
            if not self.compare(type(op), left, right):
                return False
            left = right
        return True

    def _eval_ifexp(self, node: ast.IfExp, scope: Scope) -> Any:
        return self.eval(node.body if self.truth(self.eval(node.test, scope)) else node.orelse, scope)

    def _eval_sequence(self, node: ast.List | ast.Tuple | ast.Set, scope: Scope
                       ) -> list[object] | tuple[object, ...] | set[object]:
        items = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                items.extend(self.iterate(self.eval(e.value, scope)))
            else:
                items.append(self.eval(e, scope))
        self.sized(items)
        return items if isinstance(node, ast.List) else tuple(items) if isinstance(node, ast.Tuple) \
            else set(self.hashable(items))

    def _eval_dict(self, node: ast.Dict, scope: Scope) -> dict[object, object]:
        out = {}
        for k, v in zip(node.keys, node.values):
            if k is None:
                other = self.eval(v, scope)
                if not isinstance(other, dict):
                    raise Refused("** of something that is not a dict")
                out.update(other)
            else:
                out[self.hashable([self.eval(k, scope)])[0]] = self.eval(v, scope)
        return self.sized(out)

    def _eval_subscript(self, node: ast.Subscript, scope: Scope) -> Any:
        return self.subscript(self.eval(node.value, scope), self.eval(node.slice, scope))

    def _eval_slice(self, node: ast.Slice, scope: Scope) -> slice:
        parts = [self.eval(p, scope) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def _eval_lambda(self, node: ast.Lambda, scope: Scope) -> Function:
        return self.function(node, scope)

    def _eval_joinedstr(self, node: ast.JoinedStr, scope: Scope) -> str:
        parts: list[str] = []
        size = 0
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                formatted = cast(ast.FormattedValue, v)   # an f-string holds constants and these only
                value = self.eval(formatted.value, scope)
                self.plain_or_known(value)
                spec = self.eval(formatted.format_spec, scope) if formatted.format_spec is not None else ""
                # what the field makes, before it is made: `{x:>10000000000}`, `{big!r}`
                check_spec(spec if isinstance(spec, str) else "")
                check_text(value, "an f-string field")
                if formatted.conversion == ord("r"):
                    value = repr(value)
                elif formatted.conversion == ord("s"):
                    value = str(value)
                parts.append(format(value, spec))
            size += len(parts[-1])
            if size > MAX_LEN:
                raise Refused(f"an f-string of more than {MAX_LEN} characters")
        return self.sized("".join(parts))

    def _eval_namedexpr(self, node: ast.NamedExpr, scope: Scope) -> Any:
        value = self.eval(node.value, scope)
        scope.vars[node.target.id] = value
        return value

    def _eval_other(self, node: ast.expr, scope: Scope) -> NoReturn:
        raise Refused(f"{type(node).__name__} expressions are not evaluated")

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp,
                       scope: Scope) -> list[object] | set[object] | dict[object, object]:
        inner = Scope(scope.env, scope.before, {}, outer=scope)
        results: list[Any] = []   # the elements, or a dict comprehension's (key, value) pairs

        def loop(generators: list[ast.comprehension]) -> None:
            if not generators:
                self.tick(node, scope.env)
                if isinstance(node, ast.DictComp):
                    results.append((self.eval(node.key, inner), self.eval(node.value, inner)))
                else:
                    results.append(self.eval(node.elt, inner))
                if len(results) > MAX_LEN:
                    raise Refused(f"a comprehension of more than {MAX_LEN} elements")
                return
            gen = generators[0]
            source = self.eval(gen.iter, inner if len(generators) < len(node.generators) else scope)
            for item in self.iterate(source):
                self.assign(gen.target, item, inner)
                if all(self.truth(self.eval(cond, inner)) for cond in gen.ifs):
                    loop(generators[1:])
        loop(node.generators)
        if isinstance(node, ast.DictComp):
            return dict(results)
        if isinstance(node, ast.SetComp):
            return set(self.hashable(results))
        return results

    def _call_node(self, node: ast.Call, scope: Scope) -> Any:
        fn = self.eval(node.func, scope)
        args: list[object] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.iterate(self.eval(a.value, scope)))
            else:
                args.append(self.eval(a, scope))
        kwargs: dict[str, object] = {}
        for k in node.keywords:
            if k.arg is None:
                extra = self.eval(k.value, scope)
                if not isinstance(extra, dict):
                    raise Refused("** of something that is not a dict")
                kwargs.update(extra)
            else:
                kwargs[k.arg] = self.eval(k.value, scope)
        return self.call(fn, args, kwargs, node)


_EXPRESSIONS: dict[type, Callable[[ExpressionsMixin, Any, Scope], Any]] = {
    ast.Constant: ExpressionsMixin._eval_constant,
    ast.Name: ExpressionsMixin._eval_name,
    ast.Attribute: ExpressionsMixin._eval_attribute,
    ast.BinOp: ExpressionsMixin._eval_binop,
    ast.UnaryOp: ExpressionsMixin._eval_unaryop,
    ast.BoolOp: ExpressionsMixin._eval_boolop,
    ast.Compare: ExpressionsMixin._eval_compare,
    ast.IfExp: ExpressionsMixin._eval_ifexp,
    ast.List: ExpressionsMixin._eval_sequence,
    ast.Tuple: ExpressionsMixin._eval_sequence,
    ast.Set: ExpressionsMixin._eval_sequence,
    ast.Dict: ExpressionsMixin._eval_dict,
    ast.ListComp: ExpressionsMixin._comprehension,
    ast.SetComp: ExpressionsMixin._comprehension,
    ast.GeneratorExp: ExpressionsMixin._comprehension,
    ast.DictComp: ExpressionsMixin._comprehension,
    ast.Subscript: ExpressionsMixin._eval_subscript,
    ast.Slice: ExpressionsMixin._eval_slice,
    ast.Call: ExpressionsMixin._call_node,
    ast.Lambda: ExpressionsMixin._eval_lambda,
    ast.JoinedStr: ExpressionsMixin._eval_joinedstr,
    ast.NamedExpr: ExpressionsMixin._eval_namedexpr,
}


def _expression_handler(node: ast.expr) -> Callable[[ExpressionsMixin, Any, Scope], Any]:
    """The handler for an expression's type; any other expression is refused."""
    return dispatch(_EXPRESSIONS, node) or ExpressionsMixin._eval_other
