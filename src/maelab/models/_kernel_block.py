"""The timm ``Block`` with another attention kernel and a scaled residual (:class:`KernelBlock`), built by
:func:`maelab.models._layers.make_blocks` only when an option departs from the official block. A module of its own
because it subclasses timm's ``Block``: timm is imported when a model is built, not with :mod:`maelab.models`."""

from __future__ import annotations

import torch
from timm.models.vision_transformer import Block

from .._validate import ParameterError
from ._layers import attention_weights, one_of_norm


class KernelBlock(Block):
    """A timm ``Block`` (same parameters and names) whose attention uses ``attn_norm`` (see
    :func:`attention_weights`) and whose attention residual is scaled: x <- skip_scale * x + attn(norm1(x)), then the
    usual MLP residual. With ``attn_norm="softmax"`` the attention module is timm's own. Used only when an option
    departs from the official block (:func:`make_blocks`)."""

    def __init__(self, *args, attn_norm: str = "softmax", skip_scale: float = 1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.attn_norm = one_of_norm(attn_norm)
        self.skip_scale = float(skip_scale)

    def _attention(self, x: torch.Tensor) -> torch.Tensor:
        if self.attn_norm == "softmax":
            return self.attn(x)
        a = self.attn
        n, t, _ = x.shape
        qkv = a.qkv(x).reshape(n, t, 3, a.num_heads, a.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = a.q_norm(q), a.k_norm(k)
        w = a.attn_drop(attention_weights((q * a.scale) @ k.transpose(-2, -1), self.attn_norm))
        out = (w @ v).transpose(1, 2).reshape(n, t, a.attn_dim)
        return a.proj_drop(a.proj(a.norm(out)))

    def forward(self, x: torch.Tensor, attn_mask=None, is_causal: bool = False) -> torch.Tensor:
        if attn_mask is not None or is_causal:
            raise ParameterError("attn_mask", "None (KernelBlock has no attention masks)", "a mask")
        x = self.skip_scale * x + self.drop_path1(self.ls1(self._attention(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))

    def extra_repr(self) -> str:
        return f"attn_norm={self.attn_norm!r}, skip_scale={self.skip_scale}"
