"""Python that only some releases of triton compile in a jit function, found by the resolver.

`triton_pin.APIS` finds names of the language by their text; a statement's form needs the
tree and to know which functions are jit functions, however their decorator is spelled. Triton
3.4's code generator set an assigned attribute on its value (`self.phase = ...` in a jit method
of an `@aggregate`, returning `self`); 3.5 and later refuse it ("Attribute assignment is not
supported in triton"), and 3.3 and earlier asserted a plain name. A file whose jit functions
assign attributes was written for 3.4, whatever the date or the pin's range says.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator

from ptxdiff.compile.triton_pin import Use
from ptxdiff.discovery.spelling import GLUON, JIT, Spelling
from ptxdiff.source.bounds import size_error
from ptxdiff.source.modules import Files, ModuleIndex, ParsedModule
from ptxdiff.source.syntax import walk

ATTRIBUTE_STORE = "attribute assignment in a jit function (`self.x = ...`)"
SINCE, UNTIL = "3.4", "3.5"
# a line that may assign an attribute: files without one are not parsed
_STORE_TEXT = re.compile(rb"(?m)^[ \t]+[A-Za-z_]\w*(?:\.\w+)+[ \t]*(?:[-+*/%&|^@]|//|<<|>>|\*\*)?=(?!=)")


def uses(sides: Iterable[tuple[Files, str]], roots: tuple[str, ...] = ()) -> list[Use]:
    """The window attribute assignment in a jit function puts on each (snapshot, path) given
    that has one: triton 3.4 and not 3.5."""
    found: list[Use] = []
    indexes: dict[int, tuple[ModuleIndex, Spelling]] = {}
    for files, path in sides:
        try:
            text = files.read(path)
        except (OSError, KeyError):
            continue
        if size_error(path, len(text)) or not _STORE_TEXT.search(text) or b"jit" not in text:
            continue   # a module over the size bound is never parsed (bounds.py)
        index, spelling = indexes.get(id(files)) or indexes.setdefault(id(files), _resolver(files, roots))
        mod = index.parse(path)
        if mod.tree is not None and any(_assigns_attribute(fn) for fn in _jit_functions(spelling, mod, mod.tree)):
            found += [Use(SINCE, ATTRIBUTE_STORE, path, added=True), Use(UNTIL, ATTRIBUTE_STORE, path)]
    return found


def _resolver(files: Files, roots: tuple[str, ...]) -> tuple[ModuleIndex, Spelling]:
    index = ModuleIndex(files, roots)
    return index, Spelling(index)


def _jit_functions(spelling: Spelling, mod: ParsedModule, tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """The module's functions, at any depth (methods of a class too), that a decorator jits."""
    for node in walk(tree):
        if isinstance(node, ast.FunctionDef) and node.decorator_list and \
                spelling.decorator_kinds(mod, node) & {JIT, GLUON}:
            yield node


def _assigns_attribute(fn: ast.FunctionDef) -> bool:
    for node in walk(fn):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if any(isinstance(t, ast.Attribute) or isinstance(t, ast.Tuple) and
               any(isinstance(e, ast.Attribute) for e in t.elts) for t in targets):
            return True
    return False
