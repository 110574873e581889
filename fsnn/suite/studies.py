"""Post-training studies behind one registry (:data:`STUDIES`): what is measured on a trained run's checkpoint, run by
one seam (:func:`evaluate_run`) after training (``python train.py ... study=energy``) or on an existing run folder
(``python evaluate.py run_dir=<run> study=energy``).

- ``robustness``: the test split again under every corruption and level of ``robustness=<plan>``
  (``conf/robustness/``; ``robustness=events`` alone asks for this study) -> ``robustness.json`` (the metric per
  level, the paper's robustness score per corruption) and its figures;
- ``energy``: the paper's layer-wise inference energy of one test batch (:mod:`fsnn.models.energy`) -> ``energy.json``.

A task supports the studies its entry allows (:attr:`fsnn.suite.tasks.TaskKind.studies`). A study is a function
``study(run: StudyRun, **options) -> dict`` that writes its ``<name>.json`` into the run folder. Its ``run`` is the
trained run as the study gets it (:class:`StudyRun`), supplied by :func:`evaluate_run`, not a config option; its
options are its other keyword arguments (``conf/study/<name>.yaml``), checked by the registry's schema, and an
optional ``prepare(kind, options)`` (registry metadata) checks them against the run's task before any data is
loaded.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import lightning as L
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from fsnn.atomic import write_json_atomic
from fsnn.checks import ConfigError, Count, Flag, Positive
from fsnn.data.corruptions import CORRUPTIONS
from fsnn.models.energy import energy_report, format_table
from fsnn.registry import Registry
from fsnn.runs.formatting import format_percent
from fsnn.runs.provenance import device_description, package_versions
from fsnn.runs.records import METRIC_UNIT
from fsnn.suite.robustness import check_corruption, robustness_score
from fsnn.suite.tasks import Task, TaskKind

log = logging.getLogger("fsnn")


@dataclass(frozen=True)
class StudyMeta:
    """How the suite runs a post-training study, given at its registration.

    Args:
        retest: whether the study needs the clean test metric of the run's checkpoint (its pass also writes
            ``eval.json``).
        prepare: ``prepare(kind, options) -> options``, run before any data is loaded to check and complete the
            study's options for the run's task; default ``None`` (the options as given).
    """

    retest: bool
    prepare: Callable | None = None


STUDIES = Registry("study", supplied=("run",), meta=StudyMeta)


@dataclass
class StudyRun:
    """A trained run rebuilt from its folder, as a study gets it: its config, task kind, built task with the
    checkpoint's weights, a one-device Trainer for test passes, the seed of every pass, the run's status (its
    ``metrics.json``'s; ``running`` while it trains) and the clean test metric (``None`` when the study did not ask
    for the re-test)."""

    run_dir: Path
    config: DictConfig
    kind: TaskKind
    task: Task
    trainer: L.Trainer
    checkpoint: Path
    seed: int
    limit_test_batches: int | float | None = None
    status: str = "complete"
    clean: float | None = None

    def about(self) -> dict:
        """What every study's output says of the run it measured: the folder's name, the checkpoint (relative to
        the folder, which can move) and whether the run was unfinished then."""
        return {
            "run": self.run_dir.name,
            "checkpoint": self.checkpoint.relative_to(self.run_dir).as_posix(),
            "run_status": self.status,
            "run_unfinished": self.status != "complete",
        }

    def test_pass(self, datamodule=None) -> dict[str, float]:
        """One test pass, seeded, so that every pass of a study draws the same Poisson spikes and spike noise."""
        L.seed_everything(self.seed, workers=True, verbose=False)
        return self.trainer.test(self.task.module, datamodule=datamodule or self.task.data, verbose=False)[0]

    def recorded_config(self) -> dict:
        """The run's resolved config as ``train`` recorded it in ``metrics.json`` (else resolved here)."""
        try:
            return json.loads((self.run_dir / "metrics.json").read_text())["config"]
        except (OSError, ValueError, KeyError, TypeError):
            return OmegaConf.to_container(self.config, resolve=True)


# -- robustness -------------------------------------------------------------------------------------------------------
def prepare_robustness(kind: TaskKind, options: dict) -> dict:
    """``options`` with ``plan`` checked against the task: ``{corruption: (levels, options)}`` of its family."""
    plan = options.get("plan") or {}
    corruptions = plan.get("corruptions")
    if not any(entry is not None for entry in (corruptions or {}).values()):
        raise ConfigError(
            f"robustness: expected a plan of corruptions (robustness={kind.robustness_plan} fits this "
            f"run), got {plan.get('name', 'none')!r} with none"
        )
    checked = {}
    for name, entry in corruptions.items():
        if entry is None:  # a plan built on another drops its corruptions by setting them to null
            continue
        extra = sorted(set(entry) - {"levels", "options"})
        if extra:
            raise ConfigError(f"robustness.corruptions.{name}: unknown keys {extra}; expected levels and options")
        corruption = entry.get("options") or {}
        try:
            checked[name] = (check_corruption(kind.corruptions, name, entry.get("levels"), corruption), corruption)
        except ValueError as error:
            hint = (
                ""
                if name in CORRUPTIONS.names(family=kind.corruptions)
                else (f" (this is a {kind.corruptions} run; robustness={kind.robustness_plan} fits it)")
            )
            raise ConfigError(f"robustness.corruptions.{name}: {error}{hint}") from None
    return {**options, "plan": {"name": plan.get("name"), "corruptions": checked}}


def robustness(run: StudyRun, plan: dict | None = None) -> dict:
    """Every corruption at every level of ``plan`` (prepared by :func:`prepare_robustness`); writes
    ``robustness.json`` and its figures into the run folder. Per corruption: the metric at each level and the
    paper's score ``100 * mean_i(acc_i) / clean`` (:func:`fsnn.suite.robustness.robustness_score`; ``null`` when the clean
    metric is 0).

    Args:
        run: as in :mod:`fsnn.suite.studies`, with its clean test metric.
        plan: the corruption plan, ``conf/robustness/<plan>.yaml`` as ``conf/study/robustness.yaml``'s
            ``plan: ${robustness}`` passes it and :func:`prepare_robustness` checks it:
            ``{"name": ..., "corruptions": {corruption: (levels, options)}}`` with corruptions of the task's family
            (``events`` for vision runs, ``graph``, ``graph_edges`` or ``graph_features`` for node classification);
            required: the default ``None`` (``robustness=none``) is refused before any data is loaded.
    """
    from fsnn.report.figures import (
        robustness_figures,  # matplotlib only for a robustness study
    )

    start, metric, clean = time.perf_counter(), run.task.metric, run.clean
    test = run.kind.corrupted_tester(run.config, run.task, run.seed, lambda data: run.test_pass(data)[f"test/{metric}"])
    corruptions = {}
    steps = plan["corruptions"]
    with tqdm(total=sum(len(levels) for levels, _ in steps.values()), desc="robustness", unit="test pass") as bar:
        for name, (levels, options) in steps.items():
            values = []
            for level in levels:
                bar.set_postfix_str(f"{name} {level:g}")
                values.append(float(test(name, level, options)))
                bar.update()
                log.info(
                    "%s %g: test %s %s (clean %s)",
                    name,
                    level,
                    metric,
                    format_percent(values[-1]),
                    format_percent(clean),
                )
            corruptions[name] = {
                "levels": levels,
                metric: values,
                "by_level": {f"{level:g}": v for level, v in zip(levels, values)},
                "score": robustness_score(clean, values) if clean > 0 else None,
                "options": options,
            }
    record = {
        "robustness": plan.get("name"),
        **run.about(),
        "metric": metric,
        "metric_unit": METRIC_UNIT,
        "clean": clean,
        "seed": run.seed,
        "limit_test_batches": run.limit_test_batches,
        "corruptions": corruptions,
        "config": run.recorded_config(),
        "device": device_description(run.trainer.strategy.root_device),
        "versions": package_versions(),
        "wall_time_s": time.perf_counter() - start,
    }
    write_json_atomic(run.run_dir / "robustness.json", record)
    log.info(
        "robustness: %s; scores %s",
        run.run_dir / "robustness.json",
        {name: c["score"] for name, c in corruptions.items()},
    )
    for path in robustness_figures([record], run.run_dir, echo=log.info):
        log.info("figure: %s", path)
    return record


# -- energy -----------------------------------------------------------------------------------------------------------
def energy(
    run: StudyRun, batch_size: Count | None = None, kappa: Positive | None = None, first_layer_mac: Flag = True
) -> dict:
    """The layer-wise energy table of one test batch (its first ``batch_size`` samples) through the checkpoint's
    model (:func:`fsnn.models.energy.energy_report`: firing rates and operations counted on a real forward pass); printed
    and written to ``energy.json``. ``kappa``: the MAC/AC conversion (default E_MAC / E_AC);
    ``first_layer_mac=false`` counts a first layer fed with spikes as AC.

    Args:
        run: as in :mod:`fsnn.suite.studies`; its task's :meth:`~fsnn.suite.tasks.TaskKind.sample_input` gives the
            batch.
        batch_size: how many samples of the first test batch are counted, an integer >= 1 (more than the batch
            holds counts the whole batch), or ``None`` (default: the whole first batch, the dataset's
            ``batch_size``). Energies are per sample, so it changes the average, not the unit.
        kappa: the conversion ``kappa = E_MAC / E_AC`` of the neuron-intrinsic energy (:mod:`fsnn.models.energy`), a
            number > 0, or ``None`` (default: ``4.6 / 0.9``, the paper's definition; ``4.6 / 0.9 - 1`` is the
            appendix's other reading ``E_MAC = (kappa + 1) E_AC``).
        first_layer_mac: ``True`` (default, the paper's convention) counts the first layer as MAC operations
            whatever it is fed; ``False`` counts a first layer fed with spikes (0/1) as AC operations scaled by its
            input firing rate.
    """
    x = run.kind.sample_input(run.task)
    if batch_size:
        x = x[:, :batch_size]
    report = energy_report(run.task.module.model, x, kappa=kappa, first_layer_mac=first_layer_mac)
    cfg = run.config
    record = {
        **run.about(),
        "backbone": cfg.backbone.name,
        "dataset": cfg.dataset.name,
        "neuron": cfg.neuron.name,
        **report.to_dict(),
    }
    print(format_table(report))
    write_json_atomic(run.run_dir / "energy.json", record)
    log.info("energy: %s", run.run_dir / "energy.json")
    return record


STUDIES.register("robustness", robustness, prepare=prepare_robustness, retest=True)
STUDIES.register("energy", energy, retest=False)


# -- the seam ---------------------------------------------------------------------------------------------------------
def check_study(kind: TaskKind, study: dict | None) -> tuple[str, dict] | None:
    """``(name, options)`` of the study asked for (``None`` for none), refused before any data is loaded when the
    run's task does not support it or its options do not fit the task."""
    if not study:
        return None
    name, options = study["name"], {k: v for k, v in study.items() if k != "name"}
    if name not in kind.studies:
        supported = ", ".join(kind.studies) or "none"
        raise ConfigError(f"study: expected a study the {kind.name} task supports ({supported}), got {name!r}")
    prepare = STUDIES.meta(name).prepare
    return name, prepare(kind, options) if prepare else options
