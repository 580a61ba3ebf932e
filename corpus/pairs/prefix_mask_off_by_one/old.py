"""Scale the first n_valid elements of a longer buffer."""
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
def scale_prefix_kernel(x_ptr, out_ptr, n_valid, BLOCK: tl.constexpr = 1024):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_valid
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


def launch(x, n_valid):
    # x has at least n_valid + 1 elements; only the first n_valid are processed.
    out = torch.zeros_like(x)
    grid = (triton.cdiv(n_valid, 1024),)
    scale_prefix_kernel[grid](x, out, n_valid, BLOCK=1024)
    return out


def make_inputs(n, dtype, gen):
    return _values((n + 1,), dtype, gen), max(1, n // 2)
