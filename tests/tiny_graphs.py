"""Tiny graphs and graph models for the tests: KarateClub with one SGC hop of standardized features, Erdos-Renyi
graphs, the backbones built at T = 8, a CPU trainer, and Poisson encodings of features partly certain to fire."""

from __future__ import annotations

import functools

import lightning as L
import torch
from torch_geometric.data import Data
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import erdos_renyi_graph

from fsnn.models import build_backbone
from fsnn.models.poisson import poisson_encode

T = 8
NODE_NEURON_NAMES = ("flif", "lif", "sj_lif")
MSG_NEURON_NAMES = ("fif", "sj_if", "flif")


def propagate(x, edge_index, num_nodes):
    """One SGC hop ``D^-1/2 (A + I) D^-1/2 x`` (stand-in for fsnn.data.graph_features.propagate)."""
    ei, w = gcn_norm(edge_index, None, num_nodes, add_self_loops=True)
    dense = torch.zeros(num_nodes, num_nodes).index_put_((ei[1], ei[0]), w, accumulate=True)
    return dense @ x


def standardize(x):
    """Features standardized per column."""
    return (x - x.mean(0)) / x.std(0).clamp_min(1e-6)


def neuron_kwargs(neuron, threshold=0.5):
    """A neuron's threshold and time constant (1 for the IF neurons)."""
    tau = 1.0 if neuron in ("fif", "sj_if") else 2.0
    return {"threshold": threshold, "tau": tau}


def graph_model(name, neuron, in_features, num_classes, **kwargs):
    """Backbone ``name`` at :data:`T` steps with ``neuron`` (a DRSGNN with a 4-dimensional positional encoding)."""
    if name == "drsgnn":
        kwargs.setdefault("pe_dim", 4)
    return build_backbone(
        name,
        in_features=in_features,
        num_classes=num_classes,
        neuron=neuron,
        neuron_kwargs=neuron_kwargs(neuron),
        T=T,
        **kwargs,
    )


def random_graph(n=60, p=0.12, features=8, seed=0):
    """An undirected Erdos-Renyi graph (both directions, no self loops) with Gaussian features, seeded."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    edge_index = erdos_renyi_graph(n, p)  # undirected, both directions, no self loops
    return Data(x=torch.randn(n, features, generator=g), edge_index=edge_index, num_nodes=n)


def pairs(edge_index):
    """The edges as a set of ``(source, target)``."""
    return set(map(tuple, edge_index.t().tolist()))


def cpu_trainer(epochs=2, **kwargs):
    """A quiet one-device CPU Lightning trainer without checkpoints or logger."""
    return L.Trainer(
        max_epochs=epochs,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        **kwargs,
    )


def adam(lr):
    """The optimizer factory a Lightning module of fsnn takes."""
    return functools.partial(torch.optim.Adam, lr=lr)


def mixed_probabilities(rows=16, features=50, certain=0.6, seed=0):
    """Features of which a share ``certain`` is 0 or >= 1 (never / always fire), the rest in (0, 1)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(rows, features, generator=gen)
    fixed = torch.rand(rows, features, generator=gen) < certain
    x[fixed] = torch.where(torch.rand(rows, features, generator=gen) < 0.5, -0.3, 1.5)[fixed]
    return x


def encode(x, steps=30, seed=3, frozen=False):
    """``poisson_encode`` of ``x`` with a seeded generator."""
    return poisson_encode(x, steps, generator=torch.Generator().manual_seed(seed), frozen=frozen)
