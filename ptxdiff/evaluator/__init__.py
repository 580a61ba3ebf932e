"""A restricted evaluator: the values a kernel needs from its repository, computed from source text.

Module constants, `tl.constexpr(...)` values, autotune config lists, heuristics and the small
host functions they call are *interpreted* here, statement by statement, never executed by
Python: nothing of the repository is imported or run. What the evaluator knows is closed and
listed in its modules (literals, arithmetic, comparisons, containers, comprehensions, plain
functions and classes of the repository, triton dtypes, `triton.Config`, `triton.cdiv`,
`next_power_of_2`, `math`, `itertools`, version parsing); everything else is refused with the
expression and its line (`Refused`), never guessed. Questions about the device (capability,
name, shared memory, SM count) are answered for the compile target (`Device`), not for this
machine; environment variables read as unset, so a result never depends on the reviewer's shell.

Names resolve the way Python would have bound them at that point of the module: a module's
top-level statements are executed lazily, one at a time, when a name they bind is first needed,
so `if IS_INTEL: CONFIGS += [...]` takes the branch the target takes, and host code that is
never needed is never looked at. Exceptions the evaluated code would raise (`KeyError`,
`ImportError`...) are `Raised` and can be caught by its own `try`; a refusal cannot.

Modules: `values` (the value types, limits, `Refused`/`Raised`), `scope` (scopes, functions,
modules run lazily), `core` (state and operators), `statements`, `expressions`, `attributes`,
`calls`, `host` (packages never imported, by dotted name), `installed` (the tool's own triton),
and `interp` (`Interp`, assembled from them).
"""
