import triton
import triton.language as tl


@triton.jit
def overlap_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x)
    tl.store(out_ptr + offs + 1, x * 3)   # overlaps the first store: the last one wins
