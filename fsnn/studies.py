"""Post-training studies behind one registry (:data:`STUDIES`): what is measured on a trained run's checkpoint, run by
one seam (:func:`evaluate_run`) after training (``python train.py ... study=energy``) or on an existing run folder
(``python evaluate.py run_dir=<run> study=energy``).

- ``robustness``: the test split again under every corruption and level of ``robustness=<plan>``
  (``conf/robustness/``; ``robustness=events`` alone asks for this study) -> ``robustness.json`` (the metric per
  level, the paper's robustness score per corruption) and its figures;
- ``energy``: the paper's layer-wise inference energy of one test batch (:mod:`fsnn.energy`) -> ``energy.json``.

A task supports the studies its entry allows (:attr:`fsnn.tasks.TaskKind.studies`). A study is a function
``study(run: StudyRun, **options) -> dict`` that writes its ``<name>.json`` into the run folder; its options are its
keyword arguments (``conf/study/<name>.yaml``), checked by the registry's schema, and an optional ``prepare(kind,
options)`` (registry metadata) checks them against the run's task before any data is loaded.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from fsnn.checkpoint import CheckpointError, load_checkpoint, result_config
from fsnn.checks import Count, Flag, Positive, one_of
from fsnn.config import ConfigError, Schema, Seed, check_config, check_run_config
from fsnn.energy import energy_report, format_table
from fsnn.files import (METRIC_UNIT, RunLockedError, check_writable_folder, describe_holder, device_description,
                        lock_holder, package_versions, percent, read_run_record, write_json_atomic)
from fsnn.registry import Registry
from fsnn.robustness import CORRUPTIONS, check_corruption, robustness_score
from fsnn.signals import telling
from fsnn.tasks import Task, TaskKind, build_task, task_kind
from fsnn.training import (ACCELERATORS, Batches, PercentProgressBar, SpeedMonitor, quiet_libraries,
                           reuse_freed_memory)

log = logging.getLogger("fsnn")
STUDIES = Registry("study", supplied=("run",))


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
        return {"run": self.run_dir.name, "checkpoint": self.checkpoint.relative_to(self.run_dir).as_posix(),
                "run_status": self.status, "run_unfinished": self.status != "complete"}

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
        raise ConfigError(f"robustness: expected a plan of corruptions (robustness={kind.robustness_plan} fits this "
                          f"run), got {plan.get('name', 'none')!r} with none")
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
            hint = "" if name in CORRUPTIONS.names(family=kind.corruptions) else (
                f" (this is a {kind.corruptions} run; robustness={kind.robustness_plan} fits it)")
            raise ConfigError(f"robustness.corruptions.{name}: {error}{hint}") from None
    return {**options, "plan": {"name": plan.get("name"), "corruptions": checked}}


def robustness(run: StudyRun, plan: dict | None = None) -> dict:
    """Every corruption at every level of ``plan`` (prepared by :func:`prepare_robustness`); writes
    ``robustness.json`` and its figures into the run folder. Per corruption: the metric at each level and the
    paper's score ``100 * mean_i(acc_i) / clean`` (:func:`fsnn.robustness.robustness_score`; ``null`` when the clean
    metric is 0).

    Args:
        run: the trained run as the study gets it (:class:`StudyRun`, supplied by :func:`evaluate_run`, not a config
            option), with its clean test metric.
        plan: the corruption plan, ``conf/robustness/<plan>.yaml`` as ``conf/study/robustness.yaml``'s
            ``plan: ${robustness}`` passes it and :func:`prepare_robustness` checks it:
            ``{"name": ..., "corruptions": {corruption: (levels, options)}}`` with corruptions of the task's family
            (``events`` for vision runs, ``graph``, ``graph_edges`` or ``graph_features`` for node classification);
            required: the default ``None`` (``robustness=none``) is refused before any data is loaded.
    """
    from fsnn.figures import robustness_figures  # matplotlib only for a robustness study

    start, metric, clean = time.perf_counter(), run.task.metric, run.clean
    test = run.kind.corrupted_tester(run.config, run.task, run.seed,
                                     lambda data: run.test_pass(data)[f"test/{metric}"])
    corruptions = {}
    steps = plan["corruptions"]
    with tqdm(total=sum(len(levels) for levels, _ in steps.values()), desc="robustness", unit="test pass") as bar:
        for name, (levels, options) in steps.items():
            values = []
            for level in levels:
                bar.set_postfix_str(f"{name} {level:g}")
                values.append(float(test(name, level, options)))
                bar.update()
                log.info("%s %g: test %s %s (clean %s)", name, level, metric, percent(values[-1]), percent(clean))
            corruptions[name] = {
                "levels": levels, metric: values, "by_level": {f"{level:g}": v for level, v in zip(levels, values)},
                "score": robustness_score(clean, values) if clean > 0 else None, "options": options,
            }
    record = {
        "robustness": plan.get("name"), **run.about(),
        "metric": metric, "metric_unit": METRIC_UNIT, "clean": clean, "seed": run.seed,
        "limit_test_batches": run.limit_test_batches,
        "corruptions": corruptions, "config": run.recorded_config(),
        "device": device_description(run.trainer.strategy.root_device), "versions": package_versions(),
        "wall_time_s": time.perf_counter() - start,
    }
    write_json_atomic(run.run_dir / "robustness.json", record)
    log.info("robustness: %s; scores %s", run.run_dir / "robustness.json",
             {name: c["score"] for name, c in corruptions.items()})
    for path in robustness_figures([record], run.run_dir, echo=log.info):
        log.info("figure: %s", path)
    return record


# -- energy -----------------------------------------------------------------------------------------------------------
def energy(run: StudyRun, batch_size: Count | None = None, kappa: Positive | None = None,
           first_layer_mac: Flag = True) -> dict:
    """The layer-wise energy table of one test batch (its first ``batch_size`` samples) through the checkpoint's
    model (:func:`fsnn.energy.energy_report`: firing rates and operations counted on a real forward pass); printed
    and written to ``energy.json``. ``kappa``: the MAC/AC conversion (default E_MAC / E_AC);
    ``first_layer_mac=false`` counts a first layer fed with spikes as AC.

    Args:
        run: the trained run as the study gets it (:class:`StudyRun`, supplied by :func:`evaluate_run`, not a config
            option); its task's :meth:`~fsnn.tasks.TaskKind.sample_input` gives the batch.
        batch_size: how many samples of the first test batch are counted, an integer >= 1 (more than the batch
            holds counts the whole batch), or ``None`` (default: the whole first batch, the dataset's
            ``batch_size``). Energies are per sample, so it changes the average, not the unit.
        kappa: the conversion ``kappa = E_MAC / E_AC`` of the neuron-intrinsic energy (:mod:`fsnn.energy`), a
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
    record = {**run.about(), "backbone": cfg.backbone.name, "dataset": cfg.dataset.name, "neuron": cfg.neuron.name,
              **report.to_dict()}
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
    prepare = STUDIES.meta(name).get("prepare")
    return name, prepare(kind, options) if prepare else options


class EvalSchema(Schema):
    """The top-level keys of ``conf/eval.yaml``."""

    run_dir: str = None
    checkpoint: one_of("best", "last") = None
    allow_unfinished: Flag = False
    accelerator: one_of(*ACCELERATORS) = None
    seed: Seed | None = None
    limit_test_batches: Batches = None


def check_eval_config(cfg: DictConfig) -> None:
    """Check a composed ``evaluate.py`` config; the run folder's own config is checked by :func:`open_run`."""
    values = check_config(cfg, EvalSchema, results=False)
    if not (Path(values["run_dir"]) / ".hydra" / "config.yaml").is_file():
        raise ConfigError(f"run_dir: expected the folder of a train.py run (with .hydra/config.yaml), "
                          f"got {values['run_dir']!r}")
    check_writable_folder("run_dir", values["run_dir"])  # eval/, eval.json and a study's output are written there
    run_status(Path(values["run_dir"]), values["allow_unfinished"])


def run_status(run_dir: Path, allow_unfinished: bool = False) -> str:
    """The status of the run in ``run_dir`` (its ``metrics.json``'s, ``running`` while a process holds its lock,
    ``unknown`` without a record). :class:`RunLockedError` naming the holder when a process is training it, unless
    ``allow_unfinished``: a study of a run in training would measure a checkpoint that is not its result."""
    holder = lock_holder(run_dir)
    if holder is None:
        return (read_run_record(run_dir) or {}).get("status", "unknown")
    if not allow_unfinished:
        raise RunLockedError(f"run folder {run_dir} is in use by {describe_holder(holder)}: its run is still training; "
                             "evaluate it when it has finished, or allow_unfinished=true evaluates its checkpoint now "
                             "(recorded as unfinished in the output)")
    return "running"


def open_run(run_dir: Path | str, data_dir: str | None = None) -> tuple[DictConfig, dict]:
    """``(config, result config)`` of the run folder ``run_dir``: its ``.hydra/config.yaml``, checked like a
    command line before anything is built from it (only fsnn's own ``_target_`` classes, :mod:`fsnn.config`), with
    this machine's ``data_dir`` when given. :class:`ConfigError` when it is missing or refused."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    if not saved.is_file():
        raise ConfigError(f"run_dir: expected the folder of a train.py run (with .hydra/config.yaml), "
                          f"got {str(run_dir)!r}")
    run_cfg = OmegaConf.load(saved)
    check_run_config(run_cfg, saved)
    if data_dir is not None:
        run_cfg.paths.data_dir = str(data_dir)
    return run_cfg, result_config(run_cfg)


def _checkpoint(run_dir: Path, checkpoint: str, config: dict) -> tuple[Path, dict]:
    """The run's ``checkpoint`` (``best`` or ``last``), verified and read without running code."""
    path = run_dir / "checkpoints" / f"{checkpoint}.ckpt"
    if not path.exists():
        found = sorted(p.stem for p in (run_dir / "checkpoints").glob("*.ckpt"))
        raise ConfigError(f"checkpoint={checkpoint!r}: {path} does not exist (run_dir={run_dir} has "
                          f"{'checkpoints ' + ', '.join(found) if found else 'no checkpoints'}; expected best or last)")
    try:
        return path, load_checkpoint(path, config)
    except CheckpointError as error:
        other = "last" if checkpoint == "best" else "best"
        raise CheckpointError(path, error.problem, f"checkpoint={other} tests the run's other checkpoint; "
                              "rerunning its train.py command with force=true trains it again") from None


def evaluate_run(run_dir: Path | str, study: dict | None = None, *, data_dir: str | None = None,
                 checkpoint: str = "best", accelerator: str = "auto", seed: int | None = None,
                 limit_test_batches=None, allow_unfinished: bool = False) -> dict:
    """Re-test a trained run from its saved config and ``checkpoint``, and/or run the post-training ``study``
    (``{"name": ..., **options}``) on it: the one seam of ``evaluate.py`` and of ``train.py study=...``.

    Everything is checked before any data is loaded (the run's config, the study against its task, the checkpoint).
    The re-test (without a study, or for a study that compares with it) writes ``eval.json`` (test metrics and firing
    rates); every test pass is seeded with ``seed`` (the run's seed when ``None``). A run that a process is still
    training is refused (:func:`run_status`), unless ``allow_unfinished``; every output records the run's status."""
    run_dir = Path(run_dir)
    status = run_status(run_dir, allow_unfinished)
    run_cfg, config = open_run(run_dir, data_dir)
    kind = task_kind(run_cfg)
    asked = check_study(kind, study)
    ckpt, state = _checkpoint(run_dir, checkpoint, config)
    seed = run_cfg.seed if seed is None else int(seed)
    L.seed_everything(run_cfg.seed, workers=True, verbose=False)
    task = build_task(run_cfg)
    task.module.load_state_dict(state["state_dict"])
    # a study is many passes: one tqdm bar over them instead of Lightning's bar per pass
    quiet_libraries()
    trainer = L.Trainer(logger=False, enable_checkpointing=False, default_root_dir=run_dir, accelerator=accelerator,
                        devices=1, limit_test_batches=limit_test_batches, enable_progress_bar=asked is None,
                        callbacks=[PercentProgressBar()] if asked is None else [], enable_model_summary=False)
    counted = CountedTest()
    trainer.callbacks.append(counted)
    run = StudyRun(run_dir, run_cfg, kind, task, trainer, ckpt, seed, limit_test_batches, status)
    result: dict = {**run.about(), "metric_unit": METRIC_UNIT}
    if asked is None or STUDIES.meta(asked[0])["retest"]:
        test = run.test_pass()
        metric = task.metric
        run.clean = test[f"test/{metric}"]
        result |= {f"test_{metric}": run.clean, "test_metrics": test, "firing_rates": task.module.test_rates,
                   "device": device_description(trainer.strategy.root_device),
                   "evaluated": coverage(counted, limit_test_batches, run_cfg.trainer.get("limit_test_batches"))}
        write_json_atomic(run_dir / "eval.json", result)
        log.info("test %s %s (%s; %s)", metric, percent(run.clean), ckpt, result["evaluated"]["note"])
    if asked is not None:
        name, options = asked
        result[name] = STUDIES[name](run, **options)
    return result


class CountedTest(L.Callback):
    """The batches and samples of the last test pass (a graph of link prediction counts as one sample)."""

    def __init__(self):
        self.batches = self.samples = 0

    def on_test_epoch_start(self, trainer, pl_module):
        self.batches = self.samples = 0

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        self.batches += 1
        self.samples += SpeedMonitor.samples(batch)


def coverage(counted: CountedTest, limit: int | float | None, run_limit: int | float | None) -> dict:
    """What an evaluation's test pass covered, for ``eval.json``: the split, its batches and samples, the run's own
    ``trainer.limit_test_batches``, and why the metric can differ from the run's own test."""
    same = limit == run_limit
    note = (f"the whole test split, {counted.samples} samples in {counted.batches} batches" if limit is None else
            f"{counted.samples} samples in the first {counted.batches} test batches (limit_test_batches={limit})")
    if not same:
        run_part = "the whole split" if run_limit is None else f"limit_test_batches={run_limit}"
        note += f"; the run's own test covered {run_part}, so the two can differ"
    return {"split": "test", "batches": counted.batches, "samples": counted.samples, "limit_test_batches": limit,
            "run_limit_test_batches": run_limit, "as_the_run_tested": same, "note": note}


def evaluate(cfg: DictConfig) -> dict:
    """``evaluate.py``: :func:`evaluate_run` with a composed ``conf/eval.yaml`` (``run_dir``, ``checkpoint``,
    ``study``, ``accelerator``, ``seed``, ``limit_test_batches``, ``allow_unfinished``)."""
    check_eval_config(cfg)
    quiet_libraries()
    reuse_freed_memory()
    study = OmegaConf.to_container(cfg.study, resolve=True) if cfg.get("study") else None
    outputs = ([] if study and not STUDIES.meta(study["name"])["retest"] else ["eval.json"]) + (
        [f"{study['name']}.json"] if study else [])
    # a signal stops it with one line naming what it wrote (exit 128 + n), not a success without its outputs
    with telling(f"evaluate.py run_dir={cfg.run_dir}", [cfg.run_dir], outputs):
        return evaluate_run(cfg.run_dir, study, data_dir=cfg.paths.data_dir, checkpoint=cfg.checkpoint,
                            accelerator=cfg.accelerator, seed=cfg.get("seed"),
                            limit_test_batches=cfg.get("limit_test_batches"),
                            allow_unfinished=cfg.get("allow_unfinished", False))
