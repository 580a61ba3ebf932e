"""Add a column bias to a matrix on a 2-D grid (rows x column blocks)."""
import torch
import triton
import triton.language as tl


def _values(shape, dtype, gen, lo=-3, hi=3):
    """Random values over several magnitudes (10**lo .. 10**hi), with zeros and negatives."""
    mag = 10.0 ** torch.randint(lo, hi + 1, shape, generator=gen).to(torch.float32)
    x = torch.randn(shape, generator=gen) * mag
    x = torch.where(torch.rand(shape, generator=gen) < 0.1, torch.zeros_like(x), x)
    return x.to(dtype)


@triton.jit
def add_col_bias_kernel(x_ptr, b_ptr, out_ptr, n_rows, n_cols, stride_row, BLOCK: tl.constexpr = 128):
    row = tl.program_id(0)
    pid_c = tl.program_id(0)
    cols = pid_c * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * stride_row + cols, x + b, mask=mask)


def launch(x, b):
    n_rows, n_cols = x.shape
    out = torch.zeros_like(x)
    grid = (n_rows, triton.cdiv(n_cols, 128))
    add_col_bias_kernel[grid](x, b, out, n_rows, n_cols, x.stride(0), BLOCK=128)
    return out


def make_inputs(n, dtype, gen):
    rows = 1 + n % 5
    return _values((rows, n), dtype, gen), _values((n,), dtype, gen)
