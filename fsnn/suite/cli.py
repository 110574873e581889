"""The suite's commands: ``fsnn-train`` and ``fsnn-evaluate`` (``python train.py`` and ``python evaluate.py`` in a
clone run the same functions), and ``fsnn-fixtures DIR`` (:mod:`fsnn.data.fakes.make_fixtures`), which writes fake
copies of the datasets for smoke runs (``paths.data_dir=DIR``).

Their configs are :data:`CONFIG_DIR`: the clone's top-level ``conf/`` when this package sits in a clone (an editable
install or ``python train.py``), else the copy of it that the wheel carries as ``fsnn/conf``. A folder of one's own
configs joins Hydra's search path without touching either, e.g. an experiment ``my_configs/experiment/mine.yaml``::

    fsnn-train --config-dir my_configs experiment=mine
    fsnn-train 'hydra.searchpath=[file://my_configs]' experiment=mine

Both need ``fsnn[suite]`` (Hydra, Lightning); without it they stop with one line naming it. They answer ``--help`` and
refuse a typo before loading torch, Lightning or any dataset library: those are imported once the command line is
known to run something.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fsnn.registry import MissingExtraError
from fsnn.runs.configs import config_root, register_resolvers

#: where the commands read their configs (see the module's docstring)
CONFIG_DIR = str(config_root())


def _missing_extra(error: ImportError, command: str):
    missing = MissingExtraError(f"fsnn-{command}", (error.name or "hydra").split(".")[0], "suite")
    print(f"fsnn: error: {missing}", file=sys.stderr)
    raise SystemExit(2) from None


def _run_dir(run_name, overrides, *, _root_) -> str:
    """The ``run_dir`` resolver of ``conf/hydra/default.yaml`` (:func:`fsnn.suite.run_names.run_dir_name`, which reads
    the composed config, ``_root_``): only a run resolves its folder, so Lightning is loaded here, not for ``--help``."""
    from fsnn.suite.run_names import run_dir_name

    return run_dir_name(run_name, overrides, _root_)


def _run(config_name: str, command: str) -> None:
    """Check the command line for typos (:mod:`fsnn.suite.overrides`), compose ``config_name`` from it (Hydra) and run
    ``command`` (:func:`fsnn.suite.run.train` or :func:`fsnn.suite.evaluate.evaluate`) on it, guarded."""
    try:
        import hydra
        from omegaconf import OmegaConf

        from fsnn.runs.recipe_switches import register_recipe_switches
        from fsnn.runs.renames import current_overrides
        from fsnn.suite.overrides import check_command_line
    except ImportError as error:
        _missing_extra(error, command)
    register_recipe_switches()
    sys.argv[1:] = current_overrides(sys.argv[1:])
    # a typo: one line and exit 2, before Hydra makes anything and before the heavy libraries load
    if check_command_line(Path(CONFIG_DIR), config_name):
        try:  # here, so that a missing library is one line, not a traceback from Hydra's callbacks (fsnn.suite.run)
            import fsnn.suite.evaluate
            import fsnn.suite.run  # noqa: F401
        except ImportError as error:
            _missing_extra(error, command)
    register_resolvers()
    OmegaConf.register_new_resolver("run_dir", _run_dir, replace=True)

    @hydra.main(version_base="1.3", config_path=CONFIG_DIR, config_name=config_name)
    def main(cfg):
        from fsnn.suite import evaluate, run  # loaded above

        return run.run_guarded(run.train if command == "train" else evaluate.evaluate, cfg)

    main()


def train() -> None:
    """``fsnn-train [key=value ...]``: train one run, or a sweep with ``-m`` (:func:`fsnn.suite.run.train`)."""
    _run("config", "train")


def evaluate() -> None:
    """``fsnn-evaluate run_dir=<run> [study=energy|robustness]``: re-test a finished run, or run a post-training
    study on it (:func:`fsnn.suite.evaluate.evaluate`)."""
    _run("eval", "evaluate")
