"""What a spec's guessed dtypes and heuristic inputs range over, beyond its constexprs (issue 41):
the element-type families of guessed pointers and float scalars (plan.py decides which a pair
compiles), and the sizes at which a heuristic's runtime ints are evaluated. Each is one
combination variable of resolve.py's covering set."""

from __future__ import annotations

from ptxdiff.record.launches import Launch
from ptxdiff.specs import guesses as guessmod
from ptxdiff.specs.guesses import Guess
from ptxdiff.specs.plan import Plan, SpecSource

SIZES = " (read by heuristics)"   # the combination variable of a runtime int a heuristic tests (no param has a space)


def size_variables(plan: Plan, types: dict[str, str], launch: Launch | None) -> list[tuple[str, tuple[object, ...]]]:
    """The runtime ints a heuristic tests (`plan.sizes`), each an open value of its own: the
    heuristics are evaluated at a size on each side of every test (not for a recorded launch)."""
    if launch is not None:
        return []
    return [(name + SIZES, values) for name, values in plan.sizes
            if types.get(name, "").startswith(("i", "u")) and len(values) > 1]


def wide_scalars(types: dict[str, str], sources: dict[str, SpecSource]) -> list[str]:
    """Float scalars a launcher may pass as fp64 (torch.compile does): fp32 by a guess or by what
    a launch site passes, not by config or a recording."""
    return [p for p, t in types.items() if t == "fp32" and sources.get(p) in (SpecSource.GUESSED, SpecSource.CALL_SITE)]


def family(value: str, types: dict[str, str], guessed_types: dict[str, str], sources: dict[str, SpecSource],
            written: set[str]) -> list[Guess]:
    """One element-type family (`bf16`; `bf16/fp64`: fp64 float scalars too) given to the
    guessed fp32 pointers (and float scalars) in `types`; the guesses it makes. A pointer the
    kernel only stores to (`written`) stays fp32 under a 16-bit family: inputs in bf16 and an
    fp32 output, as real launches have them, so a conversion dropped before a store shows (all
    16-bit, LLVM folds `fptrunc(fpext(x) * fpext(y))` into a bf16 multiply: no change)."""
    pointers, _, scalars = value.partition("/")
    out = []
    for p in [*(p for p, t in guessed_types.items() if t == "*fp32" and types.get(p) == t
                and (p not in written or pointers == "fp32")),
              *(wide_scalars(types, sources) if scalars else ())]:
        types[p] = f"*{pointers}" if types[p].startswith("*") else scalars
        out.append(guessmod.type_of(p, types[p]))
    return out
