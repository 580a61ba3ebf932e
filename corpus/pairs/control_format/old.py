"""LayerNorm over rows."""
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
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_row,
                     EPS: tl.constexpr = 1e-5, BLOCK: tl.constexpr = 1024):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + EPS)
    tl.store(out_ptr + row * stride_row + cols, diff * rstd * w + b, mask=mask)


def launch(x, w, b):
    rows, n_cols = x.shape
    out = torch.zeros_like(x)
    layernorm_kernel[(rows,)](x, w, b, out, n_cols, x.stride(0), BLOCK=triton.next_power_of_2(n_cols))
    return out


def make_inputs(n, dtype, gen):
    rows = 1 + n % 5
    x = _values((rows, n), dtype, gen, -1, 1) + 3.0  # nonzero mean
    return x, _values((n,), dtype, gen, -1, 1), _values((n,), dtype, gen, -1, 1)
