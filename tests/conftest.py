"""Shared fixtures: config composition, a data folder with every dataset faked in its real format; the test
environment (no downloads, no wandb, Triton's interpreter without a GPU). Shared helpers and skip markers: helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from helpers import CONF
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from fsnn.runs.configs import register_resolvers
from fsnn.runs.recipe_switches import register_recipe_switches

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("MPLBACKEND", "Agg")
# fixtures are tiny fakes: skip the loaders' completeness checks (file counts, md5) and never download
os.environ.setdefault("FSNN_DATA_VERIFY", "0")
os.environ.setdefault("FSNN_DATA_DOWNLOAD", "0")
if not torch.cuda.is_available():
    # the Triton kernels run on CPU tensors through Triton's interpreter; it is chosen when a kernel is
    # defined, so before anything imports fsnn.neurons.triton_kernels
    os.environ.setdefault("TRITON_INTERPRET", "1")
# composed configs resolve ${fsnn.env:...} and select +recipe_switch=<neuron>/<switch> as the commands do, whichever
# test file runs alone
register_resolvers()
register_recipe_switches()


@pytest.fixture
def compose_cfg():
    """``compose_cfg(*overrides)`` -> the composed config, with Hydra's own section."""

    def _compose(*overrides: str, config_name: str = "config"):
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            return compose(config_name=config_name, overrides=list(overrides), return_hydra_config=True)

    yield _compose
    GlobalHydra.instance().clear()


@pytest.fixture(scope="session")
def karate():
    """PyG's KarateClub with one SGC hop of standardized features as ``features``."""
    from tiny_graphs import propagate, standardize
    from torch_geometric.datasets import KarateClub

    data = KarateClub()[0]
    data.features = standardize(propagate(data.x, data.edge_index, data.num_nodes))
    return data


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A ``paths.data_dir`` holding tiny fakes of every dataset in its real on-disk layout."""
    from fsnn.data.fakes.fixtures import write_fixtures

    root = tmp_path_factory.mktemp("data")
    write_fixtures(root)
    return root
