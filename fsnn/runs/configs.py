"""fsnn's Hydra configs as everything that composes them sees them (the commands, the reports' estimates, the
tests): where they are (:func:`config_root`), the ``${fsnn.env:...}`` and ``${fsnn.dataset:...}`` resolvers
(:func:`register_resolvers`) and the
recipe switches of every neuron (:func:`recipe_switch_options`; Hydra reads them through
:mod:`fsnn.runs.recipe_switches`)."""

from __future__ import annotations

import os
from pathlib import Path

#: the fsnn package (this module's package, :mod:`fsnn.runs`, sits inside it); in a checkout, the repository holds it
#: beside ``conf/``
PACKAGE = Path(__file__).resolve().parents[1]


def config_root() -> Path:
    """The suite's Hydra configs: the checkout's ``conf/`` beside the package (what ``train.py`` reads in a clone),
    else the copy an installed wheel carries as ``fsnn/conf``."""
    clone = PACKAGE.parent / "conf"
    return clone if (clone / "config.yaml").is_file() else PACKAGE / "conf"


def env_setting(name: str, default=None):
    """``$name``, or ``default`` where it is unset or blank: the ``${fsnn.env:NAME,default}`` of the configs.
    A variable set to nothing is the shell's way of saying "none": taken as given, ``FSNN_RESULTS=`` would make the
    results folder ``''`` and put every run at the file system's root (``/train/...``)."""
    value = os.environ.get(name, "")
    return value if value.strip() else default


def dataset_setting(key: str, *, _parent_):
    """``${fsnn.dataset:T}`` or ``${fsnn.dataset:size}`` in a ``dataset`` config: the paper's ``T`` or frame size of
    the dataset the config names, read from its :class:`fsnn.data.info.DatasetInfo` (where they are written once); a
    square size is one side, as a config gives it. A name no dataset has leaves it null: the check of
    ``dataset.name`` names that error."""
    from fsnn.data.registry import DATASETS, dataset_info  # torch, loaded only when a dataset config is resolved

    if _parent_.name not in DATASETS:
        return None
    info = dataset_info(_parent_.name)
    if key == "T":
        return info.default_T
    if key == "size" and info.size is not None:
        height, width = info.size
        return height if height == width else [height, width]
    raise ValueError(f"${{fsnn.dataset:{key}}}: dataset {info.name!r} registers no {key}; give dataset.{key} itself")


def register_resolvers() -> None:
    """Make ``${fsnn.env:...}`` (:func:`env_setting`) and ``${fsnn.dataset:...}`` (:func:`dataset_setting`) known to
    OmegaConf, once: everything that resolves fsnn's configs calls this first."""
    from omegaconf import OmegaConf

    for name, resolver in (("fsnn.env", env_setting), ("fsnn.dataset", dataset_setting)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)


#: the switches that hold for every neuron, one file each: ``conf/recipe_switch/common/<switch>.yaml``
COMMON_SWITCHES = "common"


def recipe_switch_options(root: Path | None = None) -> dict[str, list[str]]:
    """``{neuron: [switch, ...]}``: what ``+recipe_switch=<neuron>/<switch>`` selects under the config root ``root``
    (default :func:`config_root`). Every neuron of ``conf/neuron/`` has every switch of ``recipe_switch/common/``; a
    switch that sets something only one neuron has is a file of its own, ``recipe_switch/<neuron>/<switch>.yaml``,
    and takes the place of a common switch of that name."""
    folder = (root or config_root()) / "recipe_switch"
    common = sorted(p.stem for p in (folder / COMMON_SWITCHES).glob("*.yaml"))
    return {
        neuron.stem: sorted({*common, *(p.stem for p in (folder / neuron.stem).glob("*.yaml"))})
        for neuron in sorted((folder.parent / "neuron").glob("*.yaml"))
    }
