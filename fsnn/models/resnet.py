"""Spiking ResNet (Hu et al., "Spiking Deep Residual Networks"; SpikingJelly ``model.spiking_resnet``).

BasicBlock: conv3x3-BN-neuron-conv3x3-BN, ``out + identity``, neuron **after** the addition (not SEW); downsample
conv1x1(stride)+BN without neuron. The default stem is the CIFAR one (conv3x3 stride 1, no max-pool); the head is
AdaptiveAvgPool + Linear, giving non-spiking logits ``[T, B, num_classes]``. Initialisation as torchvision /
SpikingJelly: Kaiming-normal (fan_out) convolutions, BN weight 1 and bias 0, optional zero-init of each block's last BN.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn.modules.utils import _pair

from fsnn.checks import Count, Flag, checked, one_of
from fsnn.models.layers import (
    SeqAdaptiveAvgPool2d,
    SeqBatchNorm2d,
    SeqConv2d,
    SeqMaxPool2d,
    check_sequence,
    fresh_neuron,
)
from fsnn.models.registry import register_backbone

__all__ = ["BasicBlock", "SpikingResNet", "resnet18"]


class BasicBlock(nn.Module):
    """ResNet's basic block on sequences: conv-BN-neuron, conv-BN, the (downsampled) input added, then the neuron."""

    expansion = 1

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, neuron: str = "flif", neuron_kwargs: dict | None = None
    ):
        super().__init__()
        self.conv1 = SeqConv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = SeqBatchNorm2d(planes)
        self.sn1 = fresh_neuron(neuron, neuron_kwargs)
        self.conv2 = SeqConv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = SeqBatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                SeqConv2d(inplanes, planes * self.expansion, 1, stride=stride, bias=False),
                SeqBatchNorm2d(planes * self.expansion),
            )
        self.sn2 = fresh_neuron(neuron, neuron_kwargs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.sn1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.sn2(out + identity)


class SpikingResNet(nn.Module):
    """``[T, B, in_channels, H, W] -> [T, B, num_classes]`` logits (average over T for the prediction)."""

    @checked
    def __init__(
        self,
        layers: Sequence[int] = (2, 2, 2, 2),
        num_classes: Count = 10,
        in_channels: Count = 3,
        input_size=(32, 32),
        width: Count = 64,
        stem: one_of("cifar", "imagenet") = "cifar",
        zero_init_residual: Flag = False,
        neuron: str = "flif",
        neuron_kwargs: dict | None = None,
    ):
        super().__init__()
        layers = tuple(int(n) for n in layers)
        if not layers or min(layers) < 1:
            raise ValueError(f"layers must be a non-empty sequence of integers >= 1, got {layers}")
        self.num_classes, self.in_channels, self.input_size = num_classes, in_channels, _pair(input_size)
        self.neuron = neuron

        if stem == "cifar":
            self.conv1 = SeqConv2d(in_channels, width, 3, stride=1, padding=1, bias=False)
            self.maxpool = nn.Identity()
        else:  # torchvision / SpikingJelly ImageNet stem
            self.conv1 = SeqConv2d(in_channels, width, 7, stride=2, padding=3, bias=False)
            self.maxpool = SeqMaxPool2d(3, stride=2, padding=1)
        self.bn1 = SeqBatchNorm2d(width)
        self.sn1 = fresh_neuron(neuron, neuron_kwargs)

        stages, inplanes = [], width
        for i, blocks in enumerate(layers):
            planes, stride = width * 2**i, 1 if i == 0 else 2
            stage = []
            for j in range(blocks):
                stage.append(BasicBlock(inplanes, planes, stride if j == 0 else 1, neuron, neuron_kwargs))
                inplanes = planes * BasicBlock.expansion
            stages.append(nn.Sequential(*stage))
        self.layers = nn.Sequential(*stages)
        self.avgpool = SeqAdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inplanes, self.num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock):
                    nn.init.zeros_(m.bn2.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_sequence(x, 5)
        if x.shape[2] != self.in_channels:
            raise ValueError(f"resnet expects [T, B, {self.in_channels}, H, W] inputs, got {tuple(x.shape)}")
        x = self.maxpool(self.sn1(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(self.avgpool(x).flatten(2))


@register_backbone("resnet18", supports={"static", "event"})
def resnet18(
    num_classes: int = 10,
    in_channels: int = 3,
    input_size=(32, 32),
    neuron: str = "flif",
    neuron_kwargs: dict | None = None,
    width: Count = 64,
    stem: one_of("cifar", "imagenet") = "cifar",
    zero_init_residual: Flag = False,
) -> SpikingResNet:
    """Spiking ResNet-18 with a CIFAR stem: 11,173,962 parameters for 10 classes (width 64).

    Takes ``[T, B, in_channels, H, W]`` frames and returns logits ``[T, B, num_classes]``.

    Args:
        num_classes: supplied by the task (:func:`fsnn.models.register_backbone`); default ``10``.
        in_channels: supplied by the task (:func:`fsnn.models.register_backbone`); default ``3``.
        input_size: supplied by the task (:func:`fsnn.models.register_backbone`); default ``(32, 32)``. Any size
            works (the head pools adaptively); it is recorded, not checked.
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`); default ``"flif"``.
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`); default ``None``.
        width: the channels of the stem and of the first stage, doubled at each of the four stages, an
            integer >= 1; default ``64`` (ResNet-18's).
        stem: ``"cifar"`` (default: conv3x3 stride 1, no max-pool, for 32 x 32 images) or ``"imagenet"``
            (conv7x7 stride 2 and a 3x3 max-pool, torchvision's).
        zero_init_residual: ``True`` initialises each block's last BatchNorm weight to 0, so every residual block
            starts as the identity (torchvision's option); default ``False``.
    """
    return SpikingResNet(
        (2, 2, 2, 2),
        num_classes=num_classes,
        in_channels=in_channels,
        input_size=input_size,
        width=width,
        stem=stem,
        zero_init_residual=zero_init_residual,
        neuron=neuron,
        neuron_kwargs=neuron_kwargs,
    )
