"""Link prediction (MSG on one graph): the Lightning module, the link split as a data module, and the task built
from a config (AUC and average precision).

:class:`GraphLinkPredictor` trains full-graph on the training edges of a :class:`LinkDataModule` (PyG
``RandomLinkSplit``: shuffled, val/test negatives disjoint and sampled against the whole graph) with fresh training
negatives every step, sampled against *all* positive edges and the val/test negatives, so that no evaluation pair is
ever a training negative. Evaluation embeds the graph in eval mode and logs ``val/auc``, ``val/ap``, ``test/auc``,
``test/ap``.
"""

from __future__ import annotations

import random
from typing import Callable

import lightning as L
import torch
from omegaconf import DictConfig
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader
from torchmetrics.functional.classification import binary_auroc, binary_average_precision

from fsnn.models import BACKBONES, backbone_names, build_backbone
from fsnn.tasks import node
from fsnn.tasks.common import ConfigError, Task
from fsnn.training import NonFiniteLossError, configure_optimizers

DATA_KINDS = frozenset({"graph"})
TASK = "link"  # cfg.task that selects it
METRIC = "auc"
ROBUSTNESS = None  # no corruption study for link prediction


def link_split(data, num_val: float = 0.05, num_test: float = 0.1, seed: int = 0):
    """``(train, val, test)`` of PyG's ``RandomLinkSplit`` on an undirected graph, reproducible under ``seed``.

    Edges are shuffled (not split by position); val/test get one negative per positive, sampled against the whole
    graph and disjoint from each other; no training negatives are stored (see :func:`sample_train_negatives`).
    Message passing uses the training edges for train/val and training + validation edges for test. Each split
    carries ``forbidden_edge_index``: all positive edges and the val/test negatives, both directions.
    """
    from torch_geometric.transforms import RandomLinkSplit

    split = RandomLinkSplit(num_val=num_val, num_test=num_test, is_undirected=True, split_labels=True,
                            add_negative_train_samples=False, neg_sampling_ratio=1.0)
    state = random.getstate()  # PyG's negative sampling draws with Python's random module
    try:
        random.seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            train, val, test = split(data.clone())
    finally:
        random.setstate(state)
    eval_neg = torch.cat([val.neg_edge_label_index, test.neg_edge_label_index], dim=1)
    forbidden = torch.cat([data.edge_index, eval_neg, eval_neg.flip(0)], dim=1)
    for part in (train, val, test):
        part.forbidden_edge_index = forbidden
    return train, val, test


def sample_train_negatives(data, num: int | None = None) -> torch.Tensor:
    """Training negatives ``[2, num]`` (default: as many as training positives), never a positive edge of the whole
    graph nor a val/test negative (``data.forbidden_edge_index``); no self loops."""
    from torch_geometric.utils import negative_sampling

    num = data.pos_edge_label_index.shape[1] if num is None else int(num)
    forbidden = data.forbidden_edge_index
    neg = negative_sampling(forbidden, num_nodes=data.num_nodes, num_neg_samples=num, method="sparse")
    return neg[:, neg[0] != neg[1]]


class _Single(torch.utils.data.Dataset):
    def __init__(self, item):
        self.item = item

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.item


class LinkDataModule(L.LightningDataModule):
    """One graph, split for link prediction by :func:`link_split`; every loader yields that split's ``Data`` once."""

    def __init__(self, data, num_val: float = 0.05, num_test: float = 0.1, seed: int = 0):
        super().__init__()
        self.data, self.num_val, self.num_test, self.seed = data, num_val, num_test, seed
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            self.splits = link_split(self.data, self.num_val, self.num_test, self.seed)

    def split_sizes(self) -> dict[str, int]:
        """Scored pairs of each split: training positives (negatives are drawn afresh each step), validation and
        test positives and negatives."""
        self.setup()
        return {name: int(part.pos_edge_label_index.shape[1]) + (
                    int(part.neg_edge_label_index.shape[1]) if name != "train" else 0)
                for name, part in zip(("train", "val", "test"), self.splits)}

    def _loader(self, i):
        self.setup()
        return DataLoader(_Single(self.splits[i]), batch_size=None, collate_fn=lambda d: d)

    def train_dataloader(self):
        return self._loader(0)

    def val_dataloader(self):
        return self._loader(1)

    def test_dataloader(self):
        return self._loader(2)


class GraphLinkPredictor(L.LightningModule):
    """Link prediction with a model offering ``encode(x, edge_index)`` and ``decode(z, pairs) -> logits`` (MSG).

    Training step: encode with the training edges, decode the training positives and as many fresh negatives
    (:func:`sample_train_negatives`), binary cross-entropy with logits. Validation/test: encode in eval mode with the
    split's message-passing edges, score its positive and negative pairs, log AUC and average precision.
    """

    def __init__(self, model: nn.Module, optimizer: Callable, scheduler: Callable | None = None,
                 monitor: str = "val/auc"):
        super().__init__()
        self.model, self.optimizer_factory, self.scheduler_factory, self.monitor = model, optimizer, scheduler, monitor

    def forward(self, data) -> torch.Tensor:
        return self.model.encode(data.x, data.edge_index)

    def training_step(self, data, batch_idx):
        z = self(data)
        pos = data.pos_edge_label_index
        neg = sample_train_negatives(data).to(pos.device)
        logits = self.model.decode(z, torch.cat([pos, neg], dim=1))
        labels = torch.cat([logits.new_ones(pos.shape[1]), logits.new_zeros(neg.shape[1])])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"non-finite training loss ({loss.item()}) at epoch {self.current_epoch}, "
                f"step {self.global_step}; the last good checkpoint is kept"
            )
        self.log("train/loss", loss, on_step=True, on_epoch=True, prog_bar=True, batch_size=1)
        return loss

    def _evaluate(self, data, split: str):
        z = self(data)
        pos, neg = data.pos_edge_label_index, data.neg_edge_label_index
        logits = self.model.decode(z, torch.cat([pos, neg], dim=1))
        labels = torch.cat([logits.new_ones(pos.shape[1]), logits.new_zeros(neg.shape[1])])
        loss = F.binary_cross_entropy_with_logits(logits, labels)
        target = labels.long()
        # under DDP every rank scores the whole split (one graph), so the mean over ranks is that value
        self.log(f"{split}/loss", loss, prog_bar=split == "val", batch_size=1, sync_dist=True)
        self.log(f"{split}/auc", binary_auroc(logits, target), prog_bar=True, batch_size=1, sync_dist=True)
        self.log(f"{split}/ap", binary_average_precision(logits, target), batch_size=1, sync_dist=True)

    def validation_step(self, data, batch_idx):
        self._evaluate(data, "val")

    def test_step(self, data, batch_idx):
        self._evaluate(data, "test")

    def configure_optimizers(self):
        return configure_optimizers(self, self.optimizer_factory, self.scheduler_factory, self.monitor)


def build(cfg: DictConfig, optimizer: Callable, scheduler: Callable | None) -> Task:
    """The :class:`Task` of link prediction: the graph's edges split into train/val/test, an edge-decoding backbone, AUC."""
    decoders = [name for name in backbone_names("graph") if hasattr(BACKBONES.factory(name), "decode")]
    if cfg.backbone.name not in decoders:
        raise ConfigError(f"task=link needs a backbone that decodes edges ({', '.join(decoders)}), "
                          f"got backbone={cfg.backbone.name!r}")
    graph = node.load(cfg)
    model = build_backbone(cfg.backbone.name, in_features=graph.num_features, **node.graph_options(cfg))
    return Task(GraphLinkPredictor(model, optimizer, scheduler), LinkDataModule(graph, seed=cfg.seed), METRIC)
