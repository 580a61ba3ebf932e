"""Elementwise ratio x / y."""
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
def ratio_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    out = y / x
    tl.store(out_ptr + offs, out, mask=mask)


def launch(x, y):
    out = torch.zeros_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    ratio_kernel[grid](x, y, out, n, BLOCK=1024)
    return out


def make_inputs(n, dtype, gen):
    x = _values((n,), dtype, gen)
    y = _values((n,), dtype, gen, lo=-1, hi=2).abs() + 0.5
    return x, y
