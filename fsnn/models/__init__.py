"""Spiking backbones, vision, graph and sequence, behind one registry (timm style: one file per family,
:mod:`fsnn.models.registry`).

>>> from fsnn.models import build_backbone
>>> model = build_backbone("dvsnet", num_classes=11, in_channels=2, input_size=(128, 128),
...                        neuron="flif", neuron_kwargs={"alpha": 0.5})
>>> out = model(x)  # x: [T, B, 2, 128, 128] -> out: [T, B, 11] (per-step outputs; average over T)
>>> gnn = build_backbone("sgcn", in_features=1433, num_classes=7, neuron="flif", T=100)
>>> rates = gnn(features)  # [B, 1433] node features -> [B, 7] firing rates

Vision backbones map ``[T, B, C, H, W] -> [T, B, num_classes]`` (:mod:`.dvsnet`, :mod:`.resnet`, :mod:`.spikformer`);
graph ones read node features or a whole graph (:mod:`.sgcn`: SGCN and DRSGNN, :mod:`.msg` on the manifolds of
:mod:`.manifolds`, and :mod:`.gae`, a non-spiking link-prediction reference); sequence ones map ``[T, B, C]`` to a
readout over the last steps (:mod:`.seqmlp`). Every spiking
nonlinearity is ``fsnn.build_neuron(neuron, **neuron_kwargs)`` (a fresh module per layer), so runs that compare
neurons differ only in the neuron. Each factory declares the data kinds it accepts
(``"event"``, ``"static"``, ``"graph"``, ``"sequence"``), see :func:`backbone_supports`.
"""

from fsnn.models import dvsnet, gae, msg, resnet, seqmlp, sgcn, spikformer  # noqa: F401  (each family registers itself)
from fsnn.models.dvsnet import DVSNet
from fsnn.models.gae import GAE
from fsnn.models.msg import MSG
from fsnn.models.registry import (
    BACKBONES,
    backbone_names,
    backbone_supports,
    build_backbone,
    register_backbone,
)
from fsnn.models.resnet import SpikingResNet
from fsnn.models.seqmlp import SeqMLP
from fsnn.models.sgcn import DRSGNN, SpikingGCN
from fsnn.models.spikformer import Spikformer

__all__ = [
    "BACKBONES",
    "DRSGNN",
    "DVSNet",
    "GAE",
    "MSG",
    "SeqMLP",
    "SpikingGCN",
    "SpikingResNet",
    "Spikformer",
    "backbone_names",
    "backbone_supports",
    "build_backbone",
    "register_backbone",
]
