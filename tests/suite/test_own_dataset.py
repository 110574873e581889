"""A dataset added from outside fsnn: one module (its reader and its registration) and one YAML, trained through
``fsnn-train`` as the how-to runs it, with nothing in fsnn, its report or its tests edited."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap

from helpers import ROOT
from omegaconf import OmegaConf

MODULE = '''
"""A toy event dataset: faint random events, and a burst in the quadrant that is the class."""

import torch
from torch.utils.data import Dataset

from fsnn.data import DatasetInfo, register_dataset


class ToyEvents(Dataset):
    def __init__(self, n, T, size, seed):
        generator = torch.Generator().manual_seed(seed)
        self.y = torch.randint(0, 4, (n,), generator=generator)
        self.x = torch.rand(n, T, 2, *size, generator=generator) * 0.1
        h, w = size[0] // 2, size[1] // 2
        for i, label in enumerate(self.y.tolist()):
            r, c = divmod(label, 2)
            self.x[i, :, :, r * h : (r + 1) * h, c * w : (c + 1) * w] += 1.0

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], int(self.y[i])


def build_toy_events(args):
    published = args.info.published.values()
    return tuple(ToyEvents(n, args.T, args.size, args.seed + k) for k, n in enumerate(published))


register_dataset(
    DatasetInfo(
        name="toy_events",
        kind="event",
        num_classes=4,
        in_channels=2,
        size=(16, 16),
        default_T=4,
        library="toy",
        builder=build_toy_events,
        published={"train": 48, "val": 16, "test": 16},
    )
)
'''
CONFIG = """
name: toy_events
T: 4
size: 16
batch_size: 16
val_fraction: 0.1
num_workers: 0
"""
TRAIN = """
import toy_events  # noqa: F401  (registers the dataset toy_events)
from fsnn.suite.cli import train

if __name__ == "__main__":
    train()
"""


def _write(tmp_path):
    (tmp_path / "toy_events.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "my_configs" / "dataset").mkdir(parents=True)
    (tmp_path / "my_configs" / "dataset" / "toy_events.yaml").write_text(CONFIG)
    (tmp_path / "my_train.py").write_text(TRAIN)


def test_a_dataset_of_ones_own_trains_through_fsnn_train_from_one_module_and_one_yaml(tmp_path):
    _write(tmp_path)
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    overrides = ["dataset=toy_events", "backbone=dvsnet", "backbone.channels=8", "trainer.max_epochs=1"]
    done = subprocess.run(
        [sys.executable, "my_train.py", "--config-dir", "my_configs", *overrides, "logger=none"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / "runs" / "train").glob("*/metrics.json")
    metrics = json.loads(path.read_text())
    assert metrics["status"] == "complete" and 0.0 <= metrics["test_acc"] <= 1.0
    assert metrics["config"]["dataset"]["name"] == "toy_events" and metrics["config"]["dataset"]["T"] == 4


def test_the_cost_estimate_of_ones_own_dataset_reads_its_registered_splits(tmp_path, monkeypatch):
    from fsnn.data.registry import DATASETS
    from fsnn.report.estimates import train_samples

    _write(tmp_path)
    monkeypatch.setattr(DATASETS, "_entries", dict(DATASETS._entries))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_events", raising=False)
    importlib.import_module("toy_events")
    # the release has its own validation split, so the training split is counted whole
    assert train_samples(OmegaConf.create({"dataset": {"name": "toy_events", "val_fraction": 0.1}})) == 48
