"""GAE (Kipf & Welling 2016, "Variational Graph Auto-Encoders"): a standard non-spiking link predictor, the reference
that tells what a plain graph auto-encoder reaches on a link split.

>>> from fsnn.models import build_backbone
>>> model = build_backbone("gae", in_features=F)
>>> z = model.encode(x, edge_index)     # [N, 64] node embeddings
>>> logits = model.decode(z, pairs)     # [P] inner products <z_a, z_b>, for binary_cross_entropy_with_logits

PyG's ``GAE`` with its ``InnerProductDecoder``, around one of two encoders, on features normalized to sum 1 per node
as PyG's examples' ``NormalizeFeatures`` does:

- ``encoder="gcn"`` (default): the two-layer GCN of PyG's link-prediction example (``examples/link_pred.py``),
  ``GCNConv(F, 128)`` -> ReLU -> ``GCNConv(128, 64)``;
- ``encoder="linear"``: the linear GAE of Salha et al. 2020 ("Keep it simple: graph autoencoders with one-hop linear
  models"), one ``GCNConv(F, 64)`` without activation, as PyG's ``examples/autoencoder.py`` builds it
  (``LinearEncoder``); Salha et al. find it predicts links as well as a two-layer encoder on most of their graphs.
"""

from __future__ import annotations

import torch
from torch import nn

from fsnn.checks import Count, Flag, checked, one_of
from fsnn.models.registry import register_backbone

ENCODERS = ("gcn", "linear")  # GAE's encoders (see the module's docstring)


class _GCNEncoder(nn.Module):
    """``GCNConv(F, hidden)`` -> ReLU -> ``GCNConv(hidden, dim)``; ``x`` dense or sparse CSR."""

    def __init__(self, in_features: int, hidden: int, dim: int):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv1, self.conv2 = GCNConv(in_features, hidden), GCNConv(hidden, dim)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


def _encoder(kind: str, in_features: int, hidden: int, dim: int) -> nn.Module:
    """The encoder ``kind`` of :data:`ENCODERS` mapping ``[N, in_features]`` features to ``[N, dim]`` embeddings."""
    from torch_geometric.nn import GCNConv

    return GCNConv(in_features, dim) if kind == "linear" else _GCNEncoder(in_features, hidden, dim)


@register_backbone("gae", supports={"graph"}, decodes_links=True)
class GAE(nn.Module):
    """Graph auto-encoder for link prediction (``task=link`` only: it has no classification head).

    ``encode(x, edge_index)`` gives node embeddings ``z [N, dim]``; ``decode(z, pairs)`` the logits ``<z_a, z_b>`` of
    the pairs ``[2, P]``, the inner-product decoder of PyG's ``GAE`` before its sigmoid.

    It does not spike. Every backbone is given the run's neuron and its number of steps; this one takes them and
    uses neither, so that a link-prediction run of it is composed as any other.

    ``full_graph = True``: the model needs the whole graph (``x``, ``edge_index``) for any node's output.

    Args:
        in_features: supplied by the task (:func:`fsnn.models.register_backbone`): the width ``F`` of the graph's
            node features ``x``.
        encoder: ``"gcn"`` (default, two GCN layers) or ``"linear"`` (one, without activation); see the module's
            docstring.
        hidden: the width of the first GCN layer of ``encoder="gcn"``, an integer >= 1; default ``128`` (PyG's
            example). The linear encoder has no hidden layer and leaves it unused.
        dim: the width of the embeddings, an integer >= 1; default ``64`` (PyG's example).
        normalize_features: ``True`` (default) divides each node's features by their sum before the encoder
            (:func:`fsnn.data.graph_features.normalize_rows`, PyG's example's ``NormalizeFeatures``); on raw
            bag-of-words counts the first inner products are large enough to stall training.
        neuron: supplied by the task (:func:`fsnn.models.register_backbone`), unused (see above).
        neuron_kwargs: supplied by the task (:func:`fsnn.models.register_backbone`), unused.
        T: supplied by the task (:func:`fsnn.models.register_backbone`), unused.
    """

    full_graph = True
    link_only = True

    @checked
    def __init__(
        self,
        in_features: Count,
        encoder: one_of(*ENCODERS) = "gcn",
        hidden: Count = 128,
        dim: Count = 64,
        normalize_features: Flag = True,
        neuron: str | None = None,
        neuron_kwargs: dict | None = None,
        T: int | None = None,
    ):
        super().__init__()
        from torch_geometric.nn import GAE as PygGAE

        self.in_features, self.encoder_kind, self.normalize_features = in_features, encoder, normalize_features
        self.gae = PygGAE(_encoder(encoder, in_features, hidden, dim))

    def encode(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """Node embeddings ``[N, dim]``; ``x`` ``[N, F]`` dense or sparse CSR."""
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"x must have shape [N, {self.in_features}] (dense or sparse CSR), got {tuple(x.shape)}")
        from fsnn.data.graph_features import normalize_rows  # numpy and scipy: the graph extra's, not the core's

        return self.gae.encode(normalize_rows(x) if self.normalize_features else x, edge_index)

    def decode(self, z: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        """Link logits ``[P]`` for node pairs ``pairs`` ``[2, P]`` (use with ``binary_cross_entropy_with_logits``)."""
        return self.gae.decode(z, pairs, sigmoid=False)
