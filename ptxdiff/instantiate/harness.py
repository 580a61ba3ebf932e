"""The elementwise harness a device function that is never launched itself is compiled in (a
repository decorator generates its kernels; `f = a if X else b` picks it): ptxdiff's own text
around the repository's function. Worker side: imports triton."""

from __future__ import annotations

import dataclasses
import linecache
import types
from typing import Any

from ptxdiff.discovery.kernels import Kernel
from ptxdiff.instantiate import namespace
from ptxdiff.source.syntax import python_lines
from ptxdiff.specs.resolve import Declared


def elementwise_harness(kernel: Kernel, outputs_count: int, device: Any, declared: Declared) -> tuple[object, Declared]:
    """An elementwise kernel around a device function that is never launched itself (a
    repository decorator generates its kernels): each input loaded from its own pointer,
    the function applied, each output stored. The text is ptxdiff's own; the device function
    is the repository's, built from source like any other."""
    import triton

    constexprs = [p for p in declared.params if p in declared.constexpr_params]
    inputs = [p for p in declared.params if p not in declared.constexpr_params]
    handed = {p for p in inputs if p in {q.name for q in kernel.params}}   # pointers, handed on as they are
    outputs = [f"out{i}_ptr" for i in range(outputs_count)]
    params = [p if p in handed else f"{p}_ptr" for p in inputs] + outputs + ["n_elements"] + \
        [f"{p}: tl.constexpr" for p in constexprs] + ["BLOCK: tl.constexpr"]
    call = f"_device({', '.join([*inputs, *(f'{c}={c}' for c in constexprs)])})"
    # the harness's own locals take names none of the function's params has: each input's value
    # is loaded into a local of the param's name, and a device function's `mask` param was its mask
    taken = {*declared.params, *(p.split(":")[0] for p in params)}
    offs, mask = _fresh("offs", taken), _fresh("mask", taken)
    # rank 2: square tiles of a row-major array (`offs` [BLOCK, BLOCK])
    at = "tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)" if kernel.harness_rank == 1 else \
        "(tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]) * BLOCK + tl.arange(0, BLOCK)[None, :]"
    lines = [f"def {kernel.name}_harness({', '.join(params)}):", f"    {offs} = {at}",
             f"    {mask} = {offs} < n_elements"]
    lines += [f"    {p} = tl.load({p}_ptr + {offs}, mask={mask})" for p in inputs if p not in handed]
    if outputs:   # several values unpacked as the call returns them: triton 3.0 cannot index a tuple
        values = [_fresh(f"result{i}", taken) for i in range(len(outputs))]
        lines.append(f"    {', '.join(values)} = {call}")
        lines += [f"    tl.store({o} + {offs}, {v}, mask={mask})" for o, v in zip(outputs, values)]
    else:
        lines.append(f"    {call}")
    text = "\n".join(lines) + "\n"
    filename = f"<ptxdiff harness of {kernel.id}>"
    linecache.cache[filename] = (len(text), None, python_lines(text), filename)
    import triton.language as tl
    ns = {"tl": namespace.proxy(tl), "triton": namespace.triton_top(), "_device": device,
          "__name__": f"ptxdiff_harness_{kernel.name}", "__builtins__": {}}
    code = compile(text, filename, "exec", dont_inherit=True)
    fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    pyfn = types.FunctionType(fcode, ns, fcode.co_name)
    pyfn.__annotations__ = dict.fromkeys([*constexprs, "BLOCK"], tl.constexpr)
    pyfn.__module__ = ns["__name__"]
    names = [p.split(":")[0] for p in params]
    harness = dataclasses.replace(declared, params=tuple(names), constexpr_params=frozenset([*constexprs, "BLOCK"]),
                      heuristics={}, autotune=(), runtime_defaults={},
                      notes=declared.notes + ("compiled in an elementwise harness (a device function, never "
                                              "launched itself)",))
    return triton.jit(pyfn), harness


def _fresh(name: str, taken: set[str]) -> str:
    """`name`, or `name_` with as many underscores as it takes to be none of `taken` (kept in it)."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name
