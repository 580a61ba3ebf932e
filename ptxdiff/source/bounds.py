"""How much of a repository's module ptxdiff reads: its size, and the depth and size of its tree.

Discovery parses the modules of both revisions in ptxdiff's own process, where nothing the
repository wrote may exhaust memory or the stack: Python's parser takes ~700 bytes of memory
per byte of dense source (`[a,a,a,...]`), and a 200,000-term sum or a 1000-deep nesting ends
in RecursionError in the parser or in any recursive walk of the tree (`ast.dump` of the
fingerprint, `ast.unparse`, discovery's own visitors). So a module is measured before it is
parsed and its tree after, iteratively; a module over a bound is read like one that does not
parse (its kernels get `failed` rows) with an error that names the bound.

The bounds, from the modules with jit-decorated functions of Liger-Kernel (66, the largest
91 KB, 14,339 nodes, 20 levels), the corpus (112) and the installed triton and torch (75, up to
277 KB, 36,944 nodes, 29 levels), and all 3,011 modules of triton and torch (the deepest: 94
levels, an `elif` chain):
- MAX_BYTES: 1 MB, 10x the largest real kernel file (the one larger module of triton and torch,
  1.4 MB of test tables, holds no kernel); parsing the densest 1 MB of Python peaks near
  0.7 GB, where a 40 MB module took ptxdiff to 5.9 GB.
- MAX_NODES: 250,000, more than 1 MB of ordinary code makes (~0.14 nodes per byte): it bounds
  what is kept per module, and the work of every later walk.
- MAX_DEPTH: 200 levels, 2x the deepest module seen; at 200 the deepest-recursing walk
  (`ast.dump` of an `elif` chain, ~4 frames a level) still fits in Python's stack with room
  for 150 frames of callers, and Python's own limit on nested brackets is 200 too.
"""

from __future__ import annotations

import ast

MAX_BYTES = 1_000_000
MAX_NODES = 250_000
MAX_DEPTH = 200

_WHAT = "for a module ptxdiff parses"


def size_error(path: str, size: int) -> str | None:
    """Why a module of `size` bytes is not parsed, or None when it is small enough."""
    if size <= MAX_BYTES:
        return None
    return f"{path}: {size / 1e6:.1f} MB, over the {MAX_BYTES / 1e6:g} MB bound {_WHAT}"


def tree_error(tree: ast.AST, path: str) -> str | None:
    """Why a parsed tree is not used (deeper than MAX_DEPTH, more than MAX_NODES nodes), or None.
    Level by level, iteratively, and it stops at the first bound hit: no input makes it recurse
    or run long (~0.6 us a node: a fifth of a second for all of Liger-Kernel's kernel modules)."""
    level: list[ast.AST] = [tree]
    above: list[ast.AST] = []
    depth = nodes = 0
    while level:
        depth += 1
        nodes += len(level)
        if nodes > MAX_NODES:
            return f"{path}: more than {MAX_NODES:,} syntax-tree nodes, over the bound {_WHAT}"
        if depth > MAX_DEPTH:
            # the line of a node this deep, or of one a level up (a `Load` context has none)
            line = next((n.lineno for n in (*level, *above) if hasattr(n, "lineno")), None)
            where = f"{path}:{line}" if line else path
            return f"{where}: syntax nested more than {MAX_DEPTH} levels deep, over the bound {_WHAT}"
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    below.append(value)
                elif isinstance(value, list):
                    below += [item for item in value if isinstance(item, ast.AST)]
        above, level = level, below
    return None


def parse_module(text: str, path: str) -> tuple[ast.Module | None, str | None]:
    """(tree, None) for a module within the bounds, else (None, why): a syntax error, source with
    NUL bytes, or a bound hit, in the parser (RecursionError, its stack overflowing as
    MemoryError) or in the tree. The size bound is the caller's, before the text is decoded."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        return None, f"{path}:{e.lineno}: SyntaxError: {e.msg}" if e.lineno else f"{path}: SyntaxError: {e.msg}"
    except ValueError as e:  # source with NUL bytes
        return None, f"{path}: {e}"
    except (RecursionError, MemoryError):
        return None, f"{path}: nested too deeply for Python's parser, over the {MAX_DEPTH}-level bound {_WHAT}"
    error = tree_error(tree, path)
    return (None, error) if error else (tree, None)
