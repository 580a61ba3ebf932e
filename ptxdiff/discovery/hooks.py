"""A kernel's launch hooks and autotune settings, read from its decorators: part of its identity.

`reset_to_zero`, `restore_value`, `pre_hook`, `post_hook`, `prune_configs_by`, `do_bench`,
`warmup`, `rep`, `use_cuda_graph`, `cache_results`, `key` and `do_not_specialize` of
`@triton.autotune` (or a repository's own decorator that takes `configs=`), a `triton.Config`'s
`pre_hook`, and `do_not_specialize`, `do_not_specialize_on_alignment` of `@triton.jit` decide what
a launch does around the kernel (zeroing an output an `atomic_add` accumulates into) or what it
is specialised on, often without a line of PTX changing. Each setting is kept as written (its
source text) with a digest of what it reads (a hook function's body, a module constant, through
imports as the kernel's own closure follows them), so a change of the setting or of the code it
runs is seen, and named (`autotune reset_to_zero ['C'] -> (none)`). A Config's hooks are a set:
reordering the config list changes none. Plain data, so discovery stores it.
"""

from __future__ import annotations

import ast
import hashlib

from ptxdiff.discovery.fingerprint import Closure
from ptxdiff.source.modules import ModuleIndex, ParsedModule
from ptxdiff.source.syntax import last_name, walk

# triton.autotune's parameters in order (positional arguments map by place)
AUTOTUNE_PARAMS = ("configs", "key", "prune_configs_by", "reset_to_zero", "restore_value", "pre_hook", "post_hook",
                   "warmup", "rep", "use_cuda_graph", "do_bench", "cache_results")
AUTOTUNE_SETTINGS = frozenset(AUTOTUNE_PARAMS[1:]) | {"do_not_specialize"}
JIT_SETTINGS = frozenset({"do_not_specialize", "do_not_specialize_on_alignment"})
# what only tunes (which Config is picked, how it is timed): compared where both sides autotune,
# so a kernel that drops its decorator is compared config by config; its hooks are compared always
TUNING = frozenset({"key", "warmup", "rep", "use_cuda_graph", "cache_results", "do_bench", "prune_configs_by"})
NONE = "(none)"
MAX_TEXT = 120   # the most characters of a setting shown in a reason

Hooks = tuple[tuple[str, str, str], ...]   # (setting, as written, digest of what it reads), sorted


def kernel_hooks(index: ModuleIndex, mod: ParsedModule, fn: ast.FunctionDef) -> Hooks:
    """The launch settings the decorators of `fn` give it."""
    out: dict[str, tuple[str, str]] = {}
    for dec in fn.decorator_list:
        if not isinstance(dec, ast.Call):
            continue
        given = {k.arg: k.value for k in dec.keywords if k.arg is not None}
        name = last_name(dec.func)
        if name == "autotune" or "configs" in given:
            given.update(zip(AUTOTUNE_PARAMS, dec.args))
            for setting in sorted(AUTOTUNE_SETTINGS & given.keys()):
                out[f"autotune {setting}"] = _written(index, mod, [given[setting]])
            config_hooks = _config_hooks(mod, given.get("configs"))
            if config_hooks:
                out["Config pre_hook"] = _written(index, mod, config_hooks, ordered=False)
        elif name == "jit":
            for setting in sorted(JIT_SETTINGS & given.keys()):
                out[f"jit {setting}"] = _written(index, mod, [given[setting]])
    return tuple(sorted((k, text, digest) for k, (text, digest) in out.items()))


def _config_hooks(mod: ParsedModule, configs: ast.expr | None) -> list[ast.expr]:
    """The `pre_hook=` of every `triton.Config(...)` the config list holds (through a module-level
    name bound to it, and list comprehensions)."""
    if configs is None:
        return []
    nodes: list[ast.AST] = [configs]
    if isinstance(configs, ast.Name):
        nodes += [s for s in mod.bindings.get(configs.id, ()) if isinstance(s, (ast.Assign, ast.AnnAssign))]
    out = []
    for node in nodes:
        for call in walk(node):
            if isinstance(call, ast.Call) and last_name(call.func) == "Config":
                out += [k.value for k in call.keywords if k.arg == "pre_hook"]
    return out


def _written(index: ModuleIndex, mod: ParsedModule, values: list[ast.expr], ordered: bool = True) -> tuple[str, str]:
    """Settings' text (distinct and sorted where their order does not matter) and the digest of
    the module-level definitions they read."""
    texts = [ast.unparse(v) for v in values]
    text = ", ".join(texts if ordered else sorted(set(texts)))
    closure = Closure(index)
    closure.root = mod.path
    closure.add_names(mod, sorted({n.id for v in values for n in walk(v) if isinstance(n, ast.Name)}))
    digest = hashlib.blake2b((text + "\0" + closure.fingerprint()).encode(), digest_size=8).hexdigest()
    return text, digest


def _shown(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def changes(old: Hooks, new: Hooks) -> list[str]:
    """What changed between two sides' settings, one phrase each: `autotune reset_to_zero ['C']
    -> (none)`, `autotune pre_hook zero_c (its code changed)`."""
    before = {k: (text, digest) for k, text, digest in old}
    after = {k: (text, digest) for k, text, digest in new}
    both_tune = all(any(k.startswith("autotune ") for k in side) for side in (before, after))
    out = []
    for setting in sorted(before.keys() | after.keys()):
        a, b = before.get(setting), after.get(setting)
        if a == b or not both_tune and setting.startswith("autotune ") and setting.split()[1] in TUNING:
            continue
        if a is not None and b is not None and a[0] == b[0]:
            out.append(f"{setting} {_shown(a[0])} (the code it reads changed)")
        else:
            out.append(f"{setting} {_shown(a[0]) if a else NONE} -> {_shown(b[0]) if b else NONE}")
    return out
