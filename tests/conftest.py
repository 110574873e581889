"""Shared fixtures: config composition, a data folder with every dataset faked in its real format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from fsnn.configs import register_recipe_switches, register_resolvers

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"

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
def data_root(tmp_path_factory) -> Path:
    """A ``paths.data_dir`` holding tiny fakes of every dataset in its real on-disk layout."""
    from fsnn.data.fixtures import write_fixtures

    root = tmp_path_factory.mktemp("data")
    write_fixtures(root)
    return root


def robustness_levels(study: str) -> dict[str, list[float]]:
    """``{corruption: levels}`` of ``conf/robustness/<study>.yaml``, the one place the levels are set."""
    corruptions = OmegaConf.load(CONF / "robustness" / f"{study}.yaml").corruptions
    return {name: list(entry.levels) for name, entry in corruptions.items()}


def run_app(script: str, *overrides: str, cwd: Path, env: dict | None = None, timeout: int = 600):
    """Run ``train.py``/``evaluate.py`` (or a ``scripts/`` file, or ``fsnn-report``) of this checkout as a user
    would, from ``cwd``; returns the CompletedProcess."""
    full_env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT), **(env or {})}
    command = ["-m", "fsnn.report"] if script == "fsnn-report" else [str(ROOT / script)]
    return subprocess.run(
        [sys.executable, *command, *overrides], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )


def registries() -> dict:
    """Every registry of fsnn, by what it holds (``Registry.what``)."""
    from fsnn.data.corruptions import CORRUPTIONS
    from fsnn.data.registry import DATASETS
    from fsnn.models.registry import BACKBONES
    from fsnn.neurons.registry import NEURONS
    from fsnn.suite.studies import STUDIES
    from fsnn.suite.tasks import TASKS

    return {r.what: r for r in (NEURONS, BACKBONES, DATASETS, TASKS, CORRUPTIONS, STUDIES)}
