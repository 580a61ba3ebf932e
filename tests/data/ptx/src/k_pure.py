import triton
import triton.language as tl


@triton.jit
def two_outputs_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    a = x * 3.0
    b = y + 5.0
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + offs + BLOCK, b)
