"""Sum of a vector by one program looping over chunks."""
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
def chunked_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 256):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, tl.cdiv(n, BLOCK)):
        offs = i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        acc += x
    tl.store(out_ptr, tl.sum(acc.to(tl.float32), axis=0))


def launch(x):
    out = torch.zeros((1,), dtype=x.dtype, device=x.device)
    chunked_sum_kernel[(1,)](x, out, x.numel(), BLOCK=256)
    return out


def make_inputs(n, dtype, gen):
    return (_values((n,), dtype, gen, -2, 2),)
