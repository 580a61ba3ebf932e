import triton
import triton.language as tl


@triton.jit
def exchange_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
    y = tl.load(out_ptr + (BLOCK - 1 - offs))   # what other lanes stored: no barrier before it now
    tl.debug_barrier()
    tl.store(x_ptr + offs, y)
