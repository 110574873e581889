"""Build hooks of the documentation site (``mkdocs.yml``: ``hooks``).

* Every public module, class and function of fsnn has a docstring: one missing is a warning, which ``mkdocs build
  --strict`` (``make docs``, CI) turns into a failure. Methods are not held to it (a class's docstring says what it
  does; Lightning and torch hooks such as ``forward`` or ``training_step`` keep their library's meaning).
* The docstrings' Sphinx roles (``:class:`Name```) render as the code they wrap.
* ``{{ config_groups }}`` in a page becomes the table of the config groups and their options, read from ``conf/``, so
  the list cannot fall behind the configs.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import griffe

from fsnn.runs.configs import recipe_switch_options

log = logging.getLogger("mkdocs.plugins.fsnn")
ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
#: what each config group is for (a group missing here is a build warning)
GROUPS = {
    "dataset": "the data (`conf/dataset/`; `delayed_cue` and `seq_digits` are generated sequence tasks)",
    "backbone": "the network; every spiking nonlinearity is the `neuron` group's",
    "neuron": "the spiking neuron; all share `neuron/shared/common.yaml`, so baselines get f-LIF's hyperparameters",
    "neuron_variant": "named neuron settings of the memory-horizon experiments (an alpha, a learned tau, ...)",
    "cue_variant": "`experiment=memory_horizon_variants`: the delayed cue without delay noise, or without go channel",
    "optimizer": "`torch.optim` optimizer",
    "scheduler": "learning-rate schedule",
    "trainer": "any `lightning.Trainer` argument",
    "early_stopping": "none (train for `trainer.max_epochs`) or validation: stop once the validation metric the best "
    "checkpoint is selected on has not risen for `early_stopping.patience` epochs",
    "logger": "where curves go: csv, tensorboard (`fsnn[tensorboard]`), wandb (`fsnn[wandb]`, offline by default), none",
    "paths": "`paths.data_dir` (default `$FSNN_DATA` or `./data`) and `paths.results_dir`",
    "hydra": "run folders named after the command's overrides",
    "setup": "a paper setting: dataset + backbone + its training recipe",
    "recipe": "`matched` (default: every neuron the same recipe) or `authors` (their released code's settings)",
    "recipe_switch": "the ablations only: one difference from the matched recipe, `<neuron>/<switch>` for any neuron",
    "launcher": "how a multirun runs its jobs: basic, joblib (local processes), slurm (submitit), submitit_local "
    "(submitit's SLURM path on this machine)",
    "experiment": "the paper's tables and the studies beyond them, each a sweep; `<name>_smoke` runs in seconds",
    "smoke": "`+smoke=vision|graph|sequence` shrinks any run or sweep to seconds",
    "study": "a post-training study of a trained run (none, energy, robustness), from `fsnn-train` or `fsnn-evaluate`",
    "robustness": "`fsnn-evaluate` only: the corruption study (`events` for vision runs, `graph` for node classification)",
}


def _undocumented(obj) -> list[str]:
    missing = []
    for name, member in obj.members.items():
        if name.startswith("_") or member.is_alias:
            continue
        if member.is_module:
            missing += _undocumented(member)
        if (member.is_module or member.is_class or member.is_function) and not member.docstring:
            missing.append(member.path)
    return missing


def on_pre_build(config, **kwargs) -> None:
    package = griffe.load("fsnn", search_paths=[str(ROOT)])
    for path in sorted(_undocumented(package)):
        log.warning("%s has no docstring", path)


def _config_groups() -> str:
    rows = ["| group | options | what it sets |", "|---|---|---|"]
    for folder in sorted(p for p in CONF.iterdir() if p.is_dir()):
        options = [f"`{p.stem}`" for p in sorted(folder.glob("*.yaml"))]
        if folder.name == "recipe_switch":  # <neuron>/<switch>: every neuron's switches (fsnn.runs.configs)
            switches = recipe_switch_options(CONF)
            common = set.intersection(*map(set, switches.values()))
            options = ["`common/` or `<neuron>/` x " + ", ".join(f"`{s}`" for s in sorted(common))]
            options += [
                f"`{n}/` x " + ", ".join(f"`{s}`" for s in own)
                for n, s in switches.items()
                if (own := sorted(set(s) - common))
            ]
        if folder.name not in GROUPS:
            log.warning("config group %s is not described in docs/hooks.py", folder.name)
        rows.append(f"| `{folder.name}` | {', '.join(options)} | {GROUPS.get(folder.name, '')} |")
    return "\n".join(rows)


def on_page_markdown(markdown: str, **kwargs) -> str:
    if "{{ config_groups }}" in markdown:
        markdown = markdown.replace("{{ config_groups }}", _config_groups())
    return markdown


_ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc|obj):(?=<code)")


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub("", html)
