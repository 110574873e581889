"""Spikformer (Zhou et al., ICLR 2023): spiking patch splitting + spiking self-attention without softmax.

* SPS: ``patch_stages`` x [Conv3x3 (no bias) - BN - neuron - MaxPool(3, s2, p1)] with widths D/2^(S-1), ..., D/2, D
  (the last ``pool_stages`` stages pool; all by default, so 4 stages take 128x128 to 8x8 = 64 tokens), then the
  relative position embedding Conv3x3-BN-neuron added residually.
* Block: ``x + SSA(x)``, ``x + MLP(x)``. SSA: q, k, v each Conv1d(k=1, no bias)-BN-neuron; ``(q k^T) v * scale`` per
  head (no softmax); attention neuron with threshold ``attn_threshold`` (0.5); projection Conv1d-BN-neuron.
  MLP: Conv1d-BN-neuron twice (hidden ``mlp_ratio * D``).
* Head: mean over tokens -> Linear -> ``[T, B, num_classes]`` logits. Linear layers use ``trunc_normal_(0.02)``
  as the reference model; convolutions keep PyTorch's default initialisation.

Factories: ``spikformer`` (neuromorphic: 2x128x128, D 256, 16 heads, depth 2: the paper's "Transformer-based"
backbone) and ``spikformer_imagenet`` (Spikformer-8-512, 29.69M parameters for 1000 classes; the paper trains it at
160x160): :class:`Spikformer` with two sets of defaults, each a factory whose signature is the class's.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.modules.utils import _pair

from fsnn.checks import Count, NonNegativeInt, Positive, Probability, checked
from fsnn.models.layers import (
    SeqBatchNorm1d,
    SeqBatchNorm2d,
    SeqConv1d,
    SeqConv2d,
    SeqDropPath,
    SeqMaxPool2d,
    check_sequence,
    factory_of,
    fresh_neuron,
    output_size,
)
from fsnn.models.registry import register_backbone

__all__ = ["IMAGENET", "MLP", "SPS", "SSA", "Spikformer", "SpikformerBlock", "spikformer", "spikformer_imagenet"]


class SPS(nn.Module):
    """Spiking patch splitting: ``[T, B, C, H, W] -> [T, B, D, N]`` tokens."""

    @checked
    def __init__(
        self,
        in_channels: Count,
        embed_dim: Count,
        stages: Count = 4,
        pool_stages: NonNegativeInt | None = None,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        pool_stages = stages if pool_stages is None else pool_stages
        if pool_stages > stages:
            raise ValueError(f"pool_stages must be in [0, patch_stages={stages}], got {pool_stages}")
        if embed_dim % 2 ** (stages - 1):
            raise ValueError(f"embed_dim {embed_dim} must be divisible by 2^(patch_stages-1) = {2 ** (stages - 1)}")
        self.pools = [i >= stages - pool_stages for i in range(stages)]
        layers, cin = [], in_channels
        for i, pool in enumerate(self.pools):
            cout = embed_dim // 2 ** (stages - 1 - i)
            layers.append(
                nn.Sequential(
                    SeqConv2d(cin, cout, 3, stride=1, padding=1, bias=False),
                    SeqBatchNorm2d(cout),
                    fresh_neuron(neuron, neuron_kwargs),
                    SeqMaxPool2d(3, stride=2, padding=1) if pool else nn.Identity(),
                )
            )
            cin = cout
        self.stages = nn.Sequential(*layers)
        self.rpe_conv = SeqConv2d(embed_dim, embed_dim, 3, stride=1, padding=1, bias=False)
        self.rpe_bn = SeqBatchNorm2d(embed_dim)
        self.rpe_neuron = fresh_neuron(neuron, neuron_kwargs)

    def token_grid(self, input_size) -> tuple[int, int]:
        h, w = _pair(input_size)
        for pool in self.pools:
            if pool:
                h, w = output_size(h, 3, 2, 1), output_size(w, 3, 2, 1)
        return h, w

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stages(x)
        x = x + self.rpe_neuron(self.rpe_bn(self.rpe_conv(x)))
        return x.flatten(3)


class SSA(nn.Module):
    """Spiking self-attention ``[T, B, D, N] -> [T, B, D, N]`` (no softmax)."""

    spike_attention = True  # fsnn.models.energy counts its two spike matrix products (q, k, v neurons and num_heads)

    def __init__(
        self,
        dim: int,
        num_heads: int = 16,
        scale: float = 0.125,
        attn_threshold: float = 0.5,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"embed_dim {dim} must be divisible by num_heads {num_heads}")
        self.num_heads, self.scale, self.attn_threshold = num_heads, float(scale), float(attn_threshold)
        for name in ("q", "k", "v"):
            setattr(self, f"{name}_conv", SeqConv1d(dim, dim, 1, bias=False))
            setattr(self, f"{name}_bn", SeqBatchNorm1d(dim))
            setattr(self, f"{name}_neuron", fresh_neuron(neuron, neuron_kwargs))
        self.attn_neuron = fresh_neuron(neuron, neuron_kwargs, threshold=self.attn_threshold)
        self.proj_conv = SeqConv1d(dim, dim, 1)
        self.proj_bn = SeqBatchNorm1d(dim)
        self.proj_neuron = fresh_neuron(neuron, neuron_kwargs)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        T, B, D, N = x.shape  # channel c = head * (D / heads) + j, as the reference
        return x.reshape(T, B, self.num_heads, D // self.num_heads, N).transpose(-1, -2)  # [T, B, h, N, d]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T, B, D, N = x.shape
        q = self._heads(self.q_neuron(self.q_bn(self.q_conv(x))))
        k = self._heads(self.k_neuron(self.k_bn(self.k_conv(x))))
        v = self._heads(self.v_neuron(self.v_bn(self.v_conv(x))))
        # without softmax the product is associative: take the cheaper order ((q k^T) v costs N^2 d, q (k^T v) N d^2);
        # q, k, v are spikes, so both orders give the same (integer-valued) result
        if N <= q.shape[-1]:
            attn = (q @ k.transpose(-1, -2)) @ v
        else:
            attn = q @ (k.transpose(-1, -2) @ v)
        attn = (attn * self.scale).transpose(-1, -2).reshape(T, B, D, N)
        attn = self.attn_neuron(attn)
        return self.proj_neuron(self.proj_bn(self.proj_conv(attn)))


class MLP(nn.Module):
    """Conv1d(k=1)-BN-neuron twice, ``[T, B, D, N] -> [T, B, D, N]``."""

    def __init__(self, dim: int, hidden: int, neuron: str = "flif", neuron_kwargs: dict | None = None):
        super().__init__()
        self.fc1_conv = SeqConv1d(dim, hidden, 1)
        self.fc1_bn = SeqBatchNorm1d(hidden)
        self.fc1_neuron = fresh_neuron(neuron, neuron_kwargs)
        self.fc2_conv = SeqConv1d(hidden, dim, 1)
        self.fc2_bn = SeqBatchNorm1d(dim)
        self.fc2_neuron = fresh_neuron(neuron, neuron_kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc1_neuron(self.fc1_bn(self.fc1_conv(x)))
        return self.fc2_neuron(self.fc2_bn(self.fc2_conv(x)))


class SpikformerBlock(nn.Module):
    """``x + SSA(x)``, then ``x + MLP(x)``, each branch through stochastic depth (``drop_path``)."""

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        scale: float = 0.125,
        attn_threshold: float = 0.5,
        drop_path: float = 0.0,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        self.attn = SSA(dim, num_heads, scale, attn_threshold, neuron, neuron_kwargs)
        self.mlp = MLP(dim, int(dim * mlp_ratio), neuron, neuron_kwargs)
        self.drop_path = SeqDropPath(drop_path)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop_path(self.attn(x))
        return x + self.drop_path(self.mlp(x))


class Spikformer(nn.Module):
    """``[T, B, in_channels, H, W] -> [T, B, num_classes]`` logits (average over T for the prediction).

    Args:
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`); default ``11``.
        in_channels: supplied by the task (:func:`fsnn.models.register_backbone`); default ``2``.
        input_size: supplied by the task (:func:`fsnn.models.register_backbone`); default ``(128, 128)``. The
            patch splitting must leave at least one token (checked); the head averages the tokens.
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"flif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        embed_dim: the token dimension ``D``, an integer >= 1 divisible by ``num_heads`` and by
            ``2^(patch_stages - 1)``; default ``256``.
        num_heads: the attention heads, an integer >= 1 dividing ``embed_dim``; default ``16``.
        depth: the number of Spikformer blocks (SSA + MLP), an integer >= 0; default ``2``.
        mlp_ratio: the MLP's hidden width as a multiple of ``embed_dim``, a number > 0; default ``4.0``.
        patch_stages: the conv-BN-neuron stages of the spiking patch splitting, an integer >= 1; default ``4``.
        pool_stages: how many of the last patch stages max-pool (stride 2), an integer from 0 to ``patch_stages``,
            or ``None`` (default: all of them).
        scale: the factor of the attention product ``(q k^T) v`` (no softmax), a number > 0; default ``0.125``.
        attn_threshold: the threshold of the attention neuron (it overrides the neuron's own), a number > 0;
            default ``0.5`` (Spikformer's).
        drop_path_rate: the stochastic-depth rate of the last block, rising linearly from 0 over the blocks
            (training only), a number in ``[0, 1)``; default ``0.0``.
    """

    @checked
    def __init__(
        self,
        num_classes: Count = 11,
        in_channels: Count = 2,
        input_size=(128, 128),
        embed_dim: Count = 256,
        num_heads: Count = 16,
        depth: NonNegativeInt = 2,
        mlp_ratio: Positive = 4.0,
        patch_stages: Count = 4,
        pool_stages: NonNegativeInt | None = None,
        scale: Positive = 0.125,
        attn_threshold: Positive = 0.5,
        drop_path_rate: Probability = 0.0,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        if int(embed_dim * mlp_ratio) < 1:
            raise ValueError(
                f"mlp_ratio must leave an MLP hidden width >= 1 (embed_dim * mlp_ratio), got {mlp_ratio!r}"
            )
        self.num_classes, self.in_channels = num_classes, in_channels
        self.input_size, self.embed_dim, self.neuron = _pair(input_size), embed_dim, neuron

        self.patch_embed = SPS(in_channels, embed_dim, patch_stages, pool_stages, neuron, neuron_kwargs)
        self.token_grid = self.patch_embed.token_grid(self.input_size)
        if min(self.token_grid) < 1:
            raise ValueError(f"input_size {self.input_size} leaves no tokens after {patch_stages} patch stages")
        rates = torch.linspace(0, drop_path_rate, depth).tolist() if depth else []
        self.blocks = nn.ModuleList(
            SpikformerBlock(embed_dim, num_heads, mlp_ratio, scale, attn_threshold, rate, neuron, neuron_kwargs)
            for rate in rates
        )
        self.head = nn.Linear(embed_dim, self.num_classes)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, 5)
        if x.shape[2] != self.in_channels:
            raise ValueError(f"spikformer expects [T, B, {self.in_channels}, H, W] inputs, got {tuple(x.shape)}")
        x = self.patch_embed(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(-1))


@register_backbone("spikformer", supports={"event", "static"})
@factory_of(Spikformer, {})
def spikformer(**options) -> Spikformer:
    """Neuromorphic Spikformer (2x128x128 -> 64 tokens, D 256, 16 heads, 2 blocks): 2,566,923 parameters, 11 classes.

    :class:`Spikformer` with its defaults, its arguments by keyword. Takes ``[T, B, in_channels, H, W]`` frames and
    returns logits ``[T, B, num_classes]``.
    """
    return Spikformer(**options)


#: what Spikformer-8-512 (:func:`spikformer_imagenet`) changes of :func:`spikformer`'s defaults
IMAGENET = {
    "num_classes": 1000,
    "in_channels": 3,
    "input_size": (160, 160),
    "embed_dim": 512,
    "num_heads": 8,
    "depth": 8,
}


@register_backbone("spikformer_imagenet", supports={"static", "event"})
@factory_of(Spikformer, IMAGENET)
def spikformer_imagenet(**options) -> Spikformer:
    """Spikformer-8-512 (the paper's 29.7M-parameter ImageNet model, 160x160 -> 10x10 tokens): 29,689,384 parameters.

    :class:`Spikformer` with the defaults of :data:`IMAGENET` (1000 classes, 3x160x160 inputs, ``embed_dim`` 512, 8
    heads, 8 blocks), its arguments by keyword. Takes ``[T, B, in_channels, H, W]`` frames and returns logits
    ``[T, B, num_classes]``.
    """
    return Spikformer(**options)
