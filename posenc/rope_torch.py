"""The torch side of :func:`posenc.rope.apply_rope`: its kernel and its autograd function.

Kept apart so that posenc's numpy formulas load without importing torch.
"""

from __future__ import annotations

import torch


def rotate_tensor(x, cos, sin, layout, rotary_dim):
    """The torch kernel: writes straight into one output tensor, with no full-size temporaries.

    Interleaved float32/float64: one complex multiply, (x_2i + i x_2i+1) e^{i m theta_i}. Otherwise the
    rotated dimensions are viewed as (..., 2, h) (half) or (..., h, 2) (interleaved), both members are
    multiplied by cos in one pass, and the sin terms are accumulated in place.
    """
    h = rotary_dim // 2
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if rotary_dim < x.shape[-1]:
        out[..., rotary_dim:] = x[..., rotary_dim:]
    xs = x[..., :rotary_dim]
    if xs.stride(-1) != 1:
        xs = xs.contiguous()
    if layout == "interleaved" and x.dtype in (torch.float32, torch.float64):
        try:
            zx = torch.view_as_complex(xs.unflatten(-1, (h, 2)))
        except RuntimeError:  # strides not compatible with a complex view
            zx = torch.view_as_complex(xs.contiguous().unflatten(-1, (h, 2)))
        zo = torch.view_as_complex(out[..., :rotary_dim].unflatten(-1, (h, 2)))
        torch.mul(zx, torch.complex(cos, sin), out=zo)
        return out
    member = -2 if layout == "half" else -1  # the axis that holds the two members of a pair
    shape = (2, h) if layout == "half" else (h, 2)
    xv = xs.unflatten(-1, shape)
    ov = out[..., :rotary_dim].unflatten(-1, shape)
    torch.mul(xv, cos.unsqueeze(member), out=ov)
    first, second = ov.select(member, 0), ov.select(member, 1)
    first.addcmul_(xv.select(member, 1), sin, value=-1.0)
    second.addcmul_(xv.select(member, 0), sin)
    return out


class RotaryFunction(torch.autograd.Function):
    """RoPE as an autograd function: the backward pass is the inverse rotation (R_m^T = R_{-m})."""

    @staticmethod
    def forward(ctx, x, cos, sin, layout, rotary_dim):
        ctx.save_for_backward(cos, sin)
        ctx.layout, ctx.rotary_dim = layout, rotary_dim
        return rotate_tensor(x, cos, sin, layout, rotary_dim)

    @staticmethod
    def backward(ctx, grad):
        cos, sin = ctx.saved_tensors
        return RotaryFunction.apply(grad, cos, -sin, ctx.layout, ctx.rotary_dim), None, None, None, None
