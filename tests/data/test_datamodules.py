"""The data modules' order, shards and counts: the training order depends only on (seed, epoch), each sample is
evaluated on exactly one rank, and frame datasets travel as integer counts in one dtype per split."""

from __future__ import annotations

import signal

import numpy as np
import torch
from torch.utils.data import TensorDataset

from fsnn.data import build_dataset
from fsnn.data.datamodules import ShardSampler, SplitDataModule
from fsnn.data.fakes.fixtures import write_fixtures
from fsnn.data.frame_cache import EventSource, FrameCache, FrameDataset


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


def test_frame_datasets_travel_as_counts_and_other_datasets_unchanged(tmp_path):
    write_fixtures(tmp_path, ["dvsgesture"])
    splits = build_dataset("dvsgesture", tmp_path, T=4, size=32, verify=False)
    floats = next(iter(SplitDataModule(lambda: splits, batch_size=8).test_dataloader()))[0]
    counts = next(iter(SplitDataModule(lambda: splits, batch_size=8, counts=True).test_dataloader()))[0]
    assert floats.dtype == torch.float32 and counts.dtype == torch.uint8  # the fixture's counts fit in a byte
    assert torch.equal(counts.float(), floats) and splits[2].cache.manifest["dtype"] == "uint8"
    tensors = TensorDataset(torch.arange(6.0))  # no integer view to take: served as it is
    assert next(iter(SplitDataModule(lambda: (tensors,) * 3, batch_size=6, counts=True).test_dataloader()))[
        0
    ].dtype == (torch.float32)


def test_a_split_serves_its_counts_in_the_widest_dtype_of_its_samples(tmp_path):
    def read(i):  # sample 1 puts 300 events on one pixel: more than a byte holds
        n = 10 if i == 0 else 300
        return np.zeros(n, np.int64), np.zeros(n, np.int64), np.arange(n), np.ones(n, np.int64)

    source = EventSource("toy", "train", (4, 4), ["a", "b"], [0, 1], read)
    cache = FrameCache(source, tmp_path, T=1, out_hw=(4, 4))
    data = FrameDataset(cache, [0, 1]).as_counts()
    assert cache.manifest["dtype"] == "uint16" and [data[i][0].dtype for i in range(2)] == [torch.uint16] * 2
    batch = next(iter(SplitDataModule(lambda: (data,) * 3, batch_size=2).test_dataloader()))[0]
    assert batch[:, 0, 1, 0, 0].tolist() == [10, 300]


def test_data_loader_workers_leave_the_schedulers_signals_to_the_main_process():
    class Handlers(torch.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return torch.tensor([signal.getsignal(s) is signal.SIG_IGN for s in (signal.SIGUSR1, signal.SIGUSR2)])

    module = SplitDataModule(lambda: (Handlers(), Handlers(), Handlers()), batch_size=2, num_workers=1)
    (batch,) = list(module.train_dataloader())
    assert batch.all() and signal.getsignal(signal.SIGUSR2) is signal.SIG_DFL  # the main process's own stays
