"""The twelve kinds of change of issue 39, as (old, new) kernel files of our own: eight that change
what a kernel computes and four rewrites that compute the same thing (tests/dynamic/test_oracle.py,
benchmarks/oracle.py)."""

from __future__ import annotations

HEAD = "import triton\nimport triton.language as tl\n\n\n"

ELEMENTWISE = HEAD + '''@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs {cmp} n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)


def launch(x, out):
    n = x.numel()
    {name}[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
'''

SOFTMAX = HEAD + '''@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other={pad})
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride_row + cols, num / tl.sum(num, axis=0), mask=mask)


def launch(x, out):
    softmax_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=triton.next_power_of_2(x.shape[1]))
'''

LAYERNORM = HEAD + '''@triton.jit
def layernorm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + {eps})
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride_row + cols, d * rstd * w, mask=mask)
'''

STRIDES = HEAD + '''@triton.jit
def copy2d_kernel(x_ptr, out_ptr, M, N, stride_xm, stride_xn, stride_om, stride_on,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * {sm} + rn[None, :] * {sn}, mask=mask)
    tl.store(out_ptr + rm[:, None] * stride_om + rn[None, :] * stride_on, x * 2.0, mask=mask)


def launch(x, out):
    M, N = x.shape
    copy2d_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 16))](x, out, M, N, x.stride(0), x.stride(1),
                                                          out.stride(0), out.stride(1), BLOCK_M=16, BLOCK_N=16)
'''

ROWSUM = HEAD + '''@triton.jit
def rowsum_kernel(x_ptr, out_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32){start}
    for c in range(0, n_cols, BLOCK):
        cols = c + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride_row + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def launch(x, out):
    rowsum_kernel[(x.shape[0],)](x, out, x.shape[1], x.stride(0), BLOCK=128)
'''

THREE = HEAD + '''@triton.jit
def {name}(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {expr}, mask=m)
'''

SILU = HEAD + '''@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=m)
'''
SILU_NOINLINE = HEAD + '''@triton.jit(noinline=True)
def _silu_body(x_ptr, out_ptr, n, pid, BLOCK: tl.constexpr):
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=m)


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    _silu_body(x_ptr, out_ptr, n, tl.program_id(0), BLOCK)
'''

UNROLL = HEAD + '''@triton.jit
def sum4_kernel(x_ptr, out_ptr, n, stride_row, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.zeros([BLOCK], dtype=tl.float32)
{body}    tl.store(out_ptr + offs, acc, mask=m)
'''
LOOP = '''    for i in tl.static_range(4):
        acc += tl.load(x_ptr + i * stride_row + offs, mask=m, other=0.0)
'''
UNROLLED = "".join(f"    acc += tl.load(x_ptr + {i} * stride_row + offs, mask=m, other=0.0)\n" for i in range(4))

GELU = "0.5 * x * (1.0 + tl.extra.cuda.libdevice.tanh(0.7978845608028654 * (x + {c} * x * x * x)))"
GELU_PORTABLE = "0.5 * x * (1.0 + (2.0 * tl.sigmoid(2.0 * (0.7978845608028654 * (x + {c} * x * x * x))) - 1.0))"


def _elementwise(name: str, old: str, new: str, cmp_old: str = "<", cmp_new: str = "<") -> tuple[str, str]:
    return (ELEMENTWISE.format(name=name, cmp=cmp_old, expr=old), ELEMENTWISE.format(name=name, cmp=cmp_new, expr=new))


# name -> (kernel id's file, old text, new text, does the change alter what it computes)
CASES: dict[str, tuple[str, str, str, bool]] = {
    "leaky_slope": ("leaky_relu_kernel", *_elementwise("leaky_relu_kernel", "tl.where(x > 0, x, x * 0.01)",
                                                       "tl.where(x > 0, x, x * 0.1)"), True),
    "softmax_padding": ("softmax_kernel", SOFTMAX.format(pad='float("-inf")'), SOFTMAX.format(pad="0.0"), True),
    "layernorm_eps": ("layernorm_kernel", LAYERNORM.format(eps="1e-5"), LAYERNORM.format(eps="1e-6"), True),
    "mask_off_by_one": ("scale_kernel", *_elementwise("scale_kernel", "x * 2.0", "x * 2.0", "<", "<="), True),
    "swapped_strides": ("copy2d_kernel", STRIDES.format(sm="stride_xm", sn="stride_xn"),
                        STRIDES.format(sm="stride_xn", sn="stride_xm"), True),
    "gelu_constant": ("gelu_kernel", *_elementwise("gelu_kernel", GELU_PORTABLE.format(c="0.044715"),
                                                   GELU_PORTABLE.format(c="0.04715")), True),
    "accumulator_one": ("rowsum_kernel", ROWSUM.format(start=""), ROWSUM.format(start=" + 1.0"), True),
    "relu6_bound": ("relu6_kernel", *_elementwise("relu6_kernel", "tl.minimum(tl.maximum(x, 0.0), 6.0)",
                                                  "tl.minimum(tl.maximum(x, 0.0), 8.0)"), True),
    "div_as_reciprocal": ("div_kernel", THREE.format(name="div_kernel", expr="x / y + z"),
                          THREE.format(name="div_kernel", expr="x * (1.0 / y) + z"), False),
    "reassociation": ("add3_kernel", THREE.format(name="add3_kernel", expr="(x + y) + z"),
                      THREE.format(name="add3_kernel", expr="x + (y + z)"), False),
    "noinline_helper": ("silu_kernel", SILU, SILU_NOINLINE, False),
    "hand_unrolled": ("sum4_kernel", UNROLL.format(body=LOOP), UNROLL.format(body=UNROLLED), False),
}


# beyond the twelve: a read far past its buffer (past the guard zone too), which the interpreter's
# bounds check stops on the new side alone
EXTRA: dict[str, tuple[str, str, str, bool]] = {
    "far_overrun": ("far_kernel", *_elementwise("far_kernel", "x + 1.0", "x + tl.load(x_ptr + offs + 100000)"), True),
}


def files(side: int) -> dict[str, str]:
    """The repository's files at the old (0) or the new (1) side: one module per case."""
    return {f"ops/{case}.py": texts[side] for case, (_, *texts, _) in {**CASES, **EXTRA}.items()} | \
        {"ops/__init__.py": ""}


def kernel_id(case: str) -> str:
    name = (CASES.get(case) or EXTRA[case])[0]
    return f"ops/{case}.py::{name}"
