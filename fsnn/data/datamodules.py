"""Lightning data modules: a dataset's splits as loaders, for one process or each DDP rank.

- :class:`SplitDataModule`: train/val/test datasets (frames, sequences, rows of node features); a fresh training
  permutation per epoch that depends only on ``(seed, epoch)`` (so a resumed run sees the order of an uninterrupted
  one), and every validation and test sample on exactly one rank (:class:`ShardSampler`).
- :class:`NodeDataModule`: the node splits of one graph, as feature rows or node indices.
- :class:`LinkDataModule`: one graph split for link prediction (:func:`link_split`), one ``Data`` per split.
"""

from __future__ import annotations

import copy
import random
from typing import Callable

import lightning as L
import torch
from torch.utils.data import DataLoader, DistributedSampler, Sampler, TensorDataset

from fsnn.scheduler_signals import leave_to_the_main_process


class ShardSampler(Sampler[int]):
    """Indices ``rank, rank + world, ...`` of ``n`` samples: each sample on exactly one of ``world`` ranks, in order
    (``DistributedSampler`` would pad the shards to one length with repeated samples, counting those twice)."""

    def __init__(self, n: int, world: int = 1, rank: int = 0):
        self.n, self.world, self.rank = int(n), int(world), int(rank)

    def __iter__(self):
        return iter(range(self.rank, self.n, self.world))

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.world))


def distributed_rank(module: L.LightningDataModule) -> tuple[int, int]:
    """``(world size, global rank)`` of the Trainer a data module is attached to (``(1, 0)`` without one)."""
    trainer = getattr(module, "trainer", None)
    return (trainer.world_size, trainer.global_rank) if trainer is not None else (1, 0)


class SplitDataModule(L.LightningDataModule):
    """Wraps the train/val/test datasets returned by ``build()`` (called once, at setup); ``batch_size=None`` makes
    each split one batch. ``eval_batch_size`` (default: ``batch_size``) batches validation and test: for models whose
    samples do not interact at evaluation it changes only the speed, since a spiking network's per-step cost at small
    widths is mostly fixed overhead.

    Training order: a fresh permutation each epoch that depends only on ``(seed, epoch)`` (``DistributedSampler``'s
    rule; Lightning sets the epoch), so a run resumed from a checkpoint sees the order an uninterrupted run sees, and
    under DDP each rank takes its share. Validation and test: :class:`ShardSampler`, every sample once.

    ``counts=True`` serves a frame dataset (one with ``as_counts``, :class:`fsnn.data.frame_cache.FrameDataset`) as
    its integer event counts, for a model that makes them float32 on its device: the workers collate, and the host
    copies to the device, a quarter of the bytes. Batches are pinned when a CUDA device is present, and workers
    persist across epochs."""

    def __init__(
        self,
        build: Callable[[], tuple],
        batch_size: int | None,
        num_workers: int = 0,
        seed: int = 0,
        eval_batch_size: int | None = None,
        counts: bool = False,
    ):
        super().__init__()
        self.build, self.batch_size, self.num_workers, self.seed = build, batch_size, num_workers, seed
        self.eval_batch_size, self.counts = eval_batch_size, counts
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            self.splits = self.build()

    def split_sizes(self) -> dict[str, int]:
        """Samples in each split (for ``metrics.json``)."""
        self.setup()
        return {name: len(data) for name, data in zip(("train", "val", "test"), self.splits) if data is not None}

    def _loader(self, index: int, train: bool) -> DataLoader:
        self.setup()
        data = self.splits[index]
        if self.counts and hasattr(data, "as_counts"):
            data = data.as_counts()
        size = self.batch_size if train or self.eval_batch_size is None else self.eval_batch_size
        size = len(data) if size is None else size
        world, rank = distributed_rank(self)
        sampler = (
            DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=self.seed)
            if train
            else ShardSampler(len(data), world, rank)
        )
        return DataLoader(
            data,
            batch_size=max(size, 1),
            sampler=sampler,
            num_workers=self.num_workers,
            persistent_workers=self.num_workers > 0,
            pin_memory=torch.cuda.is_available(),
            worker_init_fn=leave_to_the_main_process,
        )

    def train_dataloader(self):
        return self._loader(0, train=True)

    def val_dataloader(self):
        return self._loader(1, train=False)

    def test_dataloader(self):
        return self._loader(2, train=False)


class NodeDataModule(SplitDataModule):
    """Node splits as data loaders. ``features`` given: batches ``(features[idx], y[idx])`` (SGCN/DRSGNN rows);
    ``features=None``: batches ``(idx, y[idx])`` for full-graph models. ``batch_size=None``: one batch per split.
    Training shuffles with a seeded generator so reruns see the same order."""

    def __init__(
        self,
        features: torch.Tensor | None,
        y: torch.Tensor,
        train_idx,
        val_idx,
        test_idx,
        batch_size: int | None = 32,
        seed: int = 0,
        num_workers: int = 0,
        eval_batch_size: int | None = None,
    ):
        self.features, self.y = features, y.long()
        self.index = [_as_index(i, len(y)) for i in (train_idx, val_idx, test_idx)]
        super().__init__(
            lambda: tuple(self.dataset(k) for k in range(3)), batch_size, num_workers, seed, eval_batch_size
        )

    @classmethod
    def from_masks(cls, features, data, **kwargs) -> "NodeDataModule":
        """From a PyG ``Data`` with ``y`` and ``train_mask``/``val_mask``/``test_mask``."""
        return cls(features, data.y, data.train_mask, data.val_mask, data.test_mask, **kwargs)

    def dataset(self, split: int) -> TensorDataset:
        idx = self.index[split]
        rows = idx if self.features is None else self.features[idx]
        return TensorDataset(rows, self.y[idx])


def _as_index(index, n: int) -> torch.Tensor:
    index = torch.as_tensor(index)
    if index.dtype == torch.bool:
        if index.numel() != n:
            raise ValueError(f"a node mask must have {n} entries, got {index.numel()}")
        return index.nonzero(as_tuple=False).view(-1)
    return index.long().view(-1)


def link_split(
    data,
    num_val: float = 0.05,
    num_test: float = 0.1,
    seed: int = 0,
    *,
    authors_by_position: bool = False,
    authors_negative_pool: bool = False,
):
    """``(train, val, test)`` of PyG's ``RandomLinkSplit`` on an undirected graph, reproducible under ``seed``.

    Edges are shuffled (not split by position); val/test get one negative per positive, sampled against the whole
    graph and disjoint from each other; no training negatives are stored (see :func:`sample_train_negatives`).
    Message passing uses the training edges for train/val and training + validation edges for test. Each split
    carries ``forbidden_pairs``: all positive edges and the val/test negatives, both directions, as sorted
    :func:`pair_keys`.

    Legacy switches of the authors' MSG code (``utils/data_utils.py``; off by default, for its comparison row):

    * ``authors_by_position``: no shuffling: the stored (directed) edges in order, the first ``num_val`` of them the
      validation positives, the next ``num_test`` the test ones, the rest the training positives, which alone (one
      direction each, as stored) pass messages in every split; one draw of as many negatives as stored edges, its
      first ``num_val`` for validation and the next ``num_test`` for test.
    * ``authors_negative_pool``: training negatives come from a fixed pool, one draw of as many negatives as stored
      edges plus the validation and test negatives again (so training sees the evaluation negatives), sampled with
      replacement at each step (``negative_pool``, read by :func:`sample_train_negatives`).
    """
    from torch_geometric.transforms import RandomLinkSplit
    from torch_geometric.utils import negative_sampling

    state = random.getstate()  # PyG's negative sampling draws with Python's random module
    try:
        random.seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            if authors_by_position:
                train, val, test = _split_by_position(data, num_val, num_test)
            else:
                split = RandomLinkSplit(
                    num_val=num_val,
                    num_test=num_test,
                    is_undirected=True,
                    split_labels=True,
                    add_negative_train_samples=False,
                    neg_sampling_ratio=1.0,
                )
                train, val, test = split(copy.copy(data))  # shallow: the splits share x (1.2 GB on Physics)
            pool = None
            if authors_negative_pool:
                drawn = getattr(train, "drawn_negatives", None)
                if drawn is None:
                    drawn = negative_sampling(data.edge_index, num_nodes=data.num_nodes)
                pool = torch.cat([drawn, val.neg_edge_label_index, test.neg_edge_label_index], dim=1)
    finally:
        random.setstate(state)
    eval_neg = torch.cat([val.neg_edge_label_index, test.neg_edge_label_index], dim=1)
    forbidden = pair_keys(torch.cat([data.edge_index, eval_neg, eval_neg.flip(0)], dim=1), data.num_nodes).unique()
    for part in (train, val, test):
        part.forbidden_pairs = forbidden
        if "drawn_negatives" in part:
            del part.drawn_negatives
        if pool is not None:
            part.negative_pool = pool
    return train, val, test


def _split_by_position(data, num_val: float, num_test: float):
    """The authors' split (see :func:`link_split`'s ``authors_by_position``)."""
    from torch_geometric.utils import negative_sampling

    edges = data.edge_index
    n_val, n_test = int(num_val * edges.shape[1]), int(num_test * edges.shape[1])
    drawn = negative_sampling(edges, num_nodes=data.num_nodes)
    parts = []
    for lo, hi in ((n_val + n_test, edges.shape[1]), (0, n_val), (n_val, n_val + n_test)):
        part = copy.copy(data)
        part.edge_index = edges[:, n_val + n_test :]
        part.pos_edge_label_index = edges[:, lo:hi]
        part.pos_edge_label = torch.ones(hi - lo)
        if lo < n_val + n_test:
            part.neg_edge_label_index = drawn[:, lo:hi]
            part.neg_edge_label = torch.zeros(hi - lo)
        parts.append(part)
    parts[0].drawn_negatives = drawn
    return tuple(parts)


def pair_keys(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The ordered pairs ``(i, j)``, ``i != j``, of ``edge_index`` as integers ``i (N - 1) + j - [j > i]`` in ``[0, N (N
    - 1))`` (self loops dropped): the numbering of :func:`sample_train_negatives`."""
    row, col = edge_index
    keep = row != col
    row, col = row[keep], col[keep]
    return row * (num_nodes - 1) + col - (col > row).long()


def _key_pairs(keys: torch.Tensor, num_nodes: int) -> torch.Tensor:
    row, col = keys // (num_nodes - 1), keys % (num_nodes - 1)
    return torch.stack([row, col + (col >= row).long()])


def sample_train_negatives(data, num: int | None = None) -> torch.Tensor:
    """Training negatives ``[2, num]`` (default: as many as training positives): distinct ordered pairs drawn
    uniformly from those that are no self loop, no positive edge of the whole graph and no val/test negative
    (``data.forbidden_pairs``, sorted :func:`pair_keys`), in random order, from torch's generator.

    PyG's ``negative_sampling`` does the same, drawing ``1.1 num / P(allowed)`` distinct pairs and keeping the allowed
    ones (up to three rounds), but it draws them one by one in Python (1.4 s a step on Physics); here the draws are
    vectorised: uniform draws with replacement, their distinct values (a uniformly random subset), the allowed ones
    (binary search), a uniformly random ``num`` of them. Fewer than ``num`` only where the graph has too few
    non-edges. Where ``data`` carries a ``negative_pool`` (:func:`link_split`'s ``authors_negative_pool``), ``num`` columns of it
    drawn with replacement instead."""
    num = data.pos_edge_label_index.shape[1] if num is None else int(num)
    pool = getattr(data, "negative_pool", None)
    if pool is not None:  # the authors' fixed pool (link_split's authors_negative_pool): with replacement
        return pool[:, torch.randint(pool.shape[1], (num,), device=pool.device)]
    n, forbidden = data.num_nodes, data.forbidden_pairs
    population = n * (n - 1)
    allowed = population - forbidden.numel()
    if allowed <= 0 or num <= 0:
        return forbidden.new_empty(2, 0)
    found = forbidden.new_empty(0)
    for _ in range(3):
        draw = torch.randint(population, (int(1.1 * num * population / allowed) + 1,), device=forbidden.device)
        draw = torch.cat([found, draw]).unique()
        at = torch.searchsorted(forbidden, draw).clamp(max=max(forbidden.numel() - 1, 0))
        found = draw[forbidden[at] != draw] if forbidden.numel() else draw
        if found.numel() >= num:
            break
    found = found[torch.randperm(found.numel(), device=found.device)[:num]]
    return _key_pairs(found, n)


def link_split_leaks(splits, epochs: int = 200) -> dict[str, float]:
    """What the evaluation pairs of a :func:`link_split` ``(train, val, test)`` share with training, counted on the
    split itself:

    * ``val_reverse_in_train`` / ``test_reverse_in_train``: the share of the validation (test) positives ``(u, v)``
      whose reverse ``(v, u)`` is a training positive;
    * ``val_reverse_in_messages`` / ``test_reverse_in_messages``: the share whose reverse is among the edges that pass
      messages when that split is scored (its ``edge_index``);
    * ``test_negatives_in_pool``: the share of the test negatives that a training negative can be: in the
      ``negative_pool`` where there is one, else outside ``forbidden_pairs`` (:func:`sample_train_negatives`);
    * ``test_negative_draws``: the expected number of times one test negative is drawn as a training negative over
      ``epochs`` training steps (one a epoch, each drawing as many negatives as there are training positives, ``P``):
      ``epochs P m / |pool|`` for a negative held ``m`` times in a pool of ``|pool|`` columns drawn with replacement;
      without a pool ``P`` distinct pairs out of the ``A`` allowed ones, ``epochs P / A`` for an allowed pair; the
      mean over the test negatives.
    """
    train, val, test = splits
    n = train.num_nodes

    def keys(pairs):  # every ordered pair, self loops included, as one integer
        return pairs[0] * n + pairs[1]

    def reverse_share(positives, edges):
        return float(torch.isin(keys(positives.flip(0)), keys(edges)).double().mean())

    test_negatives, draws_per_step = test.neg_edge_label_index, train.pos_edge_label_index.shape[1]
    pool = getattr(train, "negative_pool", None)
    if pool is not None:
        pooled = keys(pool).sort().values
        wanted = keys(test_negatives)
        held = torch.searchsorted(pooled, wanted, right=True) - torch.searchsorted(pooled, wanted)
        in_pool, per_pair = held > 0, held.double() * draws_per_step / pool.shape[1]
    else:
        allowed = n * (n - 1) - train.forbidden_pairs.numel()
        forbidden = keys(_key_pairs(train.forbidden_pairs, n))
        in_pool = ~torch.isin(keys(test_negatives), forbidden) & (test_negatives[0] != test_negatives[1])
        per_pair = in_pool.double() * min(draws_per_step, allowed) / max(allowed, 1)
    return {
        "val_reverse_in_train": reverse_share(val.pos_edge_label_index, train.pos_edge_label_index),
        "val_reverse_in_messages": reverse_share(val.pos_edge_label_index, val.edge_index),
        "test_reverse_in_train": reverse_share(test.pos_edge_label_index, train.pos_edge_label_index),
        "test_reverse_in_messages": reverse_share(test.pos_edge_label_index, test.edge_index),
        "test_negatives_in_pool": float(in_pool.double().mean()),
        "test_negative_draws": float(epochs * per_pair.mean()),
    }


class _Single(torch.utils.data.Dataset):
    def __init__(self, item):
        self.item = item

    def __len__(self):
        return 1

    def __getitem__(self, i):
        return self.item


class LinkDataModule(L.LightningDataModule):
    """One graph, split for link prediction by :func:`link_split`; every loader yields that split's ``Data`` once.
    Features that are mostly zeros are held as one sparse CSR matrix shared by the splits (MSG multiplies them so)."""

    def __init__(
        self,
        data,
        num_val: float = 0.05,
        num_test: float = 0.1,
        seed: int = 0,
        *,
        authors_by_position: bool = False,
        authors_negative_pool: bool = False,
    ):
        super().__init__()
        self.data, self.num_val, self.num_test, self.seed = data, num_val, num_test, seed
        self.authors = {"authors_by_position": authors_by_position, "authors_negative_pool": authors_negative_pool}
        self.splits = None

    def setup(self, stage: str | None = None):
        if self.splits is None:
            from fsnn.data.graph_features import sparse_if_sparse

            self.splits = link_split(self.data, self.num_val, self.num_test, self.seed, **self.authors)
            x = sparse_if_sparse(self.data.x)  # the splits share one x; mostly zero features as sparse CSR
            for part in self.splits:
                part.x = x
            self.data = None  # the dense features go with it (the splits hold everything the loaders yield)

    def split_sizes(self) -> dict[str, int]:
        """Scored pairs of each split: training positives (negatives are drawn afresh each step), validation and
        test positives and negatives."""
        self.setup()
        return {
            name: int(part.pos_edge_label_index.shape[1])
            + (int(part.neg_edge_label_index.shape[1]) if name != "train" else 0)
            for name, part in zip(("train", "val", "test"), self.splits)
        }

    def _loader(self, i):
        self.setup()
        return DataLoader(_Single(self.splits[i]), batch_size=None, collate_fn=lambda d: d)

    def train_dataloader(self):
        return self._loader(0)

    def val_dataloader(self):
        return self._loader(1)

    def test_dataloader(self):
        return self._loader(2)
