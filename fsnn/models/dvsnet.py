"""DVSNet: SpikingJelly's DVS128 Gesture network (``model.parametric_lif_net.DVSGestureNet``, Fang et al. 2021).

``num_blocks`` x [Conv3x3(C, no bias) - BN - neuron - MaxPool 2] -> flatten -> Dropout 0.5 -> Linear(hidden) ->
neuron -> Dropout 0.5 -> Linear(voting * classes) -> neuron -> VotingLayer(voting). The output is the firing of
the last layer averaged over each group of ``voting`` neurons, ``[T, B, num_classes]`` in [0, 1]. This is the paper's
"CNN-based" backbone. ``voting=1`` is one output neuron per class, the head of the authors' released HarDVS CNN;
with it N-Caltech101 (101 classes, 128x128) has the paper's tab:different_T_params counts, 1.69M / 4.52M / 13.70M
parameters at C = 128 / 256 / 512 (the voting head would have 2.16M / 4.98M / 14.16M). Weights keep PyTorch's
default initialisation, as SpikingJelly's model does.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.modules.utils import _pair

from fsnn.checks import Count, Probability, check_int, checked
from fsnn.models.layers import (
    SeqBatchNorm2d,
    SeqConv2d,
    SeqDropout,
    SeqMaxPool2d,
    VotingLayer,
    check_sequence,
    factory_of,
    fresh_neuron,
)
from fsnn.models.registry import register_backbone

__all__ = ["DVSNet", "dvsnet"]


class DVSNet(nn.Module):
    """Convolutional SNN for event frames ``[T, B, in_channels, H, W] -> [T, B, num_classes]``.

    A block max-pools (2x2) only while both spatial sides are >= 2, so small inputs (34x34 N-MNIST) work with any
    ``num_blocks``; the flatten size is ``channels * h * w`` of the last map.

    Args:
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`); default ``11``.
        in_channels: supplied by the task (:func:`fsnn.models.register_backbone`); default ``2``.
        input_size: supplied by the task (:func:`fsnn.models.register_backbone`); default ``(128, 128)``.
            The network is built for it (the flatten size depends on it): other inputs are refused.
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"flif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        channels: the channels ``C`` of every convolution block, an integer >= 1; default ``128`` (the paper's
            N-Caltech101 ablation also uses 256 and 512; ``conf/backbone/dvsnet_small.yaml``: 32).
        num_blocks: the number of conv-BN-neuron-maxpool blocks, an integer >= 1; default ``5`` (a block pools only
            while both sides are >= 2).
        hidden: the width of the hidden fully connected layer, an integer >= 1; default ``512``.
        dropout: the probability of both dropout layers of the classifier (one mask per sample for all steps,
            training only), a number in ``[0, 1)``; default ``0.5``.
        voting: the output neurons per class whose firing is averaged (SpikingJelly's voting head), an
            integer >= 1; default ``10`` (``1``: one neuron per class, the authors' released HarDVS CNN).
    """

    @checked
    def __init__(
        self,
        num_classes: Count = 11,
        in_channels: Count = 2,
        input_size=(128, 128),
        channels: Count = 128,
        num_blocks: Count = 5,
        hidden: Count = 512,
        dropout: Probability = 0.5,
        voting: Count = 10,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        self.num_classes, self.in_channels = num_classes, in_channels
        h, w = (check_int("input_size", s) for s in _pair(input_size))
        self.input_size = (h, w)
        self.neuron = neuron

        blocks = []
        self.pooled = []
        cin = in_channels
        for _ in range(num_blocks):
            pool = h >= 2 and w >= 2
            blocks.append(
                nn.Sequential(
                    SeqConv2d(cin, channels, kernel_size=3, padding=1, bias=False),
                    SeqBatchNorm2d(channels),
                    fresh_neuron(neuron, neuron_kwargs),
                    SeqMaxPool2d(2, 2) if pool else nn.Identity(),
                )
            )
            if pool:
                h, w = h // 2, w // 2
            self.pooled.append(pool)
            cin = channels
        self.features = nn.Sequential(*blocks)
        self.feature_shape = (channels, h, w)
        self.flatten_size = channels * h * w
        self.classifier = nn.Sequential(
            nn.Flatten(start_dim=2),
            SeqDropout(dropout),
            nn.Linear(self.flatten_size, hidden),
            fresh_neuron(neuron, neuron_kwargs),
            SeqDropout(dropout),
            nn.Linear(hidden, voting * self.num_classes),
            fresh_neuron(neuron, neuron_kwargs),
        )
        self.voting = VotingLayer(voting)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, 5)
        if x.shape[2] != self.in_channels or tuple(x.shape[3:]) != self.input_size:
            raise ValueError(
                f"dvsnet was built for [T, B, {self.in_channels}, {self.input_size[0]}, {self.input_size[1]}] "
                f"inputs, got {tuple(x.shape)}"
            )
        return self.voting(self.classifier(self.features(x)))


@register_backbone("dvsnet", supports={"event", "static"})
@factory_of(DVSNet, {})
def dvsnet(**options) -> DVSNet:
    """SpikingJelly ``DVSGestureNet`` (C=128, 5 blocks, FC 512, voting 10): 1,698,926 parameters for 11 classes.

    Takes ``[T, B, in_channels, H, W]`` frames and returns the voted firing rates ``[T, B, num_classes]``.
    """
    return DVSNet(**options)
