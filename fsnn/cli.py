"""The suite's two commands, ``fsnn-train`` and ``fsnn-evaluate``; ``python train.py`` and ``python evaluate.py`` in a
clone run the same functions.

Their configs are :data:`CONFIG_DIR`: the clone's top-level ``conf/`` when this package sits in a clone (an editable
install or ``python train.py``), else the copy of it that the wheel carries as ``fsnn/conf``. A folder of one's own
configs joins Hydra's search path without touching either, e.g. an experiment ``my_configs/experiment/mine.yaml``::

    fsnn-train --config-dir my_configs experiment=mine
    fsnn-train 'hydra.searchpath=[file://my_configs]' experiment=mine
"""

from __future__ import annotations

from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from fsnn import app

_CLONE_CONF = Path(__file__).resolve().parents[1] / "conf"
#: where the commands read their configs (see the module's docstring)
CONFIG_DIR = str(_CLONE_CONF if (_CLONE_CONF / "config.yaml").is_file() else Path(__file__).resolve().parent / "conf")

OmegaConf.register_new_resolver("run_dir", app.run_dir_name, replace=True)


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="config")
def train(cfg: DictConfig) -> float:
    """``fsnn-train [key=value ...]``: train one run, or a sweep with ``-m`` (:func:`fsnn.app.train`)."""
    return app.run_guarded(app.train, cfg)


@hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name="eval")
def evaluate(cfg: DictConfig) -> None:
    """``fsnn-evaluate run_dir=<run> [robustness=events|graph]``: re-test a finished run (:func:`fsnn.app.evaluate`)."""
    app.run_guarded(app.evaluate, cfg)
