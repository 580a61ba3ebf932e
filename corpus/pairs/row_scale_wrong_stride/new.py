"""Scale each row of a (possibly strided) matrix by a per-row factor."""
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
def row_scale_kernel(x_ptr, s_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr = 1024):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    s = tl.load(s_ptr + row)
    tl.store(out_ptr + row * stride_out + cols, x * s, mask=mask)


def launch(x, s):
    rows, n_cols = x.shape
    out = torch.zeros((rows, n_cols), dtype=x.dtype, device=x.device)
    row_scale_kernel[(rows,)](x, s, out, n_cols, x.stride(0), out.stride(0),
                              BLOCK=triton.next_power_of_2(n_cols))
    return out


def make_inputs(n, dtype, gen):
    rows = 2 + n % 5
    wide = _values((rows, n + 3), dtype, gen)
    x = wide[:, 1:n + 1]  # a column slice: stride(0) = n + 3 != n_cols
    return x, _values((rows,), dtype, gen, -1, 1)
