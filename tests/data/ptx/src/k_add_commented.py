# A file with a long header comment, so every line of the kernel moves down.
#
# This is just text.
#
#

import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Add two vectors."""
    pid = tl.program_id(0)  # which block

    offs = pid * BLOCK + tl.arange(0, BLOCK)

    # bounds
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)

    y = tl.load(y_ptr + offs, mask=mask)
    # write out
    tl.store(out_ptr + offs, x + y, mask=mask)
