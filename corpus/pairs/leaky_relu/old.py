"""Leaky ReLU; the slope is a compile-time constant."""
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
def leaky_relu_kernel(x_ptr, out_ptr, n, SLOPE: tl.constexpr = 0.01, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x, x * SLOPE)
    tl.store(out_ptr + offs, y, mask=mask)


def launch(x):
    out = torch.zeros_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    leaky_relu_kernel[grid](x, out, n, BLOCK=1024)
    return out


def make_inputs(n, dtype, gen):
    return (_values((n,), dtype, gen),)
