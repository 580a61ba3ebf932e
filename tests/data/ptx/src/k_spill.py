import triton
import triton.language as tl


@triton.jit
def spill_kernel(a_ptr, b_ptr, c_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    c = tl.load(c_ptr + offs, mask=mask)
    acc = tl.sum(a * b, 0) + tl.sum(tl.exp(c), 0)
    tl.store(out_ptr + offs, a * acc + b / acc + tl.sqrt(c), mask=mask)
