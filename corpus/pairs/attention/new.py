"""Single-head attention, whole key sequence in one block (seq_len <= 64)."""
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
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_s,
                     HEAD_DIM: tl.constexpr = 32, BLOCK_M: tl.constexpr = 32,
                     BLOCK_N: tl.constexpr = 64, SM_SCALE: tl.constexpr = 0.17677669529663687):
    pid = tl.program_id(0)
    rm = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rm[:, None] * stride_s + rd[None, :], mask=rm[:, None] < seq_len, other=0.0)
    k = tl.load(k_ptr + rn[:, None] * stride_s + rd[None, :], mask=rn[:, None] < seq_len, other=0.0)
    v = tl.load(v_ptr + rn[:, None] * stride_s + rd[None, :], mask=rn[:, None] < seq_len, other=0.0)
    qk = tl.dot(q, tl.trans(k))
    qk = tl.where(rn[None, :] < seq_len, qk, float("-inf"))
    p = tl.exp(qk - tl.max(qk, axis=1)[:, None])
    o = tl.dot(p, v) / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + rm[:, None] * stride_s + rd[None, :], o, mask=rm[:, None] < seq_len)


def launch(q, k, v):
    seq_len, head_dim = q.shape
    assert head_dim == 32 and seq_len <= 64
    o = torch.zeros_like(q)
    grid = (triton.cdiv(seq_len, 32),)
    attention_kernel[grid](q, k, v, o, seq_len, q.stride(0))
    return o


def make_inputs(n, dtype, gen):
    seq_len = max(1, min(n, 64))
    return tuple(_values((seq_len, 32), dtype, gen, -1, 1) for _ in range(3))
