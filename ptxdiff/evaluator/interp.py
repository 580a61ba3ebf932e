"""`Interp`: the restricted evaluator, one class assembled from its parts.

Statements, expressions, attributes, calls and the knowledge of packages that are never
imported are separate mixins (each a module of this package); `Interp` is what the rest of
ptxdiff uses.
"""

from __future__ import annotations

from ptxdiff.evaluator.attributes import AttributesMixin
from ptxdiff.evaluator.calls import CallsMixin
from ptxdiff.evaluator.expressions import ExpressionsMixin
from ptxdiff.evaluator.host import HostMixin
from ptxdiff.evaluator.statements import StatementsMixin


class Interp(StatementsMixin, ExpressionsMixin, AttributesMixin, CallsMixin, HostMixin):
    """Evaluates one snapshot's module-level values for one compile target."""
