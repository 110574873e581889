"""The data modules' order and shards: the training order depends only on (seed, epoch), and each sample is
evaluated on exactly one rank."""

from __future__ import annotations

import torch
from torch.utils.data import TensorDataset

from fsnn.data.datamodules import ShardSampler, SplitDataModule


def test_training_order_depends_only_on_seed_and_epoch():
    data = TensorDataset(torch.arange(20))

    def order(seed: int, epoch: int, warm_up: int = 0) -> list[int]:
        module = SplitDataModule(lambda: (data, data, data), batch_size=4, seed=seed)
        loader = module.train_dataloader()
        for e in range(warm_up):  # epochs iterated before, as an uninterrupted run does
            loader.sampler.set_epoch(e)
            list(loader)
        loader.sampler.set_epoch(epoch)  # what Lightning does at each epoch's start
        return torch.cat([b[0] for b in loader]).tolist()

    assert order(0, 2) == order(0, 2, warm_up=2)  # a resumed run sees the uninterrupted run's order
    assert sorted(order(0, 2)) == list(range(20)) and order(0, 2) != order(0, 1) and order(0, 2) != order(1, 2)
    val = SplitDataModule(lambda: (data, data, data), batch_size=4, seed=0).val_dataloader()
    assert torch.cat([b[0] for b in val]).tolist() == list(range(20))


def test_each_sample_is_evaluated_on_exactly_one_rank():
    for n, world in ((10, 3), (2, 4), (7, 1)):
        shards = [list(ShardSampler(n, world, rank)) for rank in range(world)]
        assert sorted(i for shard in shards for i in shard) == list(range(n))
        assert [len(ShardSampler(n, world, rank)) for rank in range(world)] == [len(s) for s in shards]
