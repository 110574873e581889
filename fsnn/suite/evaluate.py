"""``fsnn-evaluate`` (``evaluate.py``): reopen a finished run folder, check its saved config, and test its
best checkpoint again or run a study on it (:mod:`fsnn.suite.studies`)."""

from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
import yaml
from omegaconf import DictConfig, OmegaConf

from fsnn.atomic import write_json_atomic
from fsnn.checks import ConfigError, Flag, one_of
from fsnn.models.poisson import describe_encoders
from fsnn.runs.formatting import format_percent
from fsnn.runs.interrupts import exit_on_interrupt
from fsnn.runs.provenance import device_description
from fsnn.runs.records import METRIC_UNIT, read_run_record
from fsnn.runs.renames import current_config
from fsnn.suite.callbacks import PercentProgressBar, SpeedMonitor
from fsnn.suite.checkpoint import CheckpointError, check_fits, load_checkpoint, result_config
from fsnn.suite.config import app_keys, check_config, check_run_config, check_top_level_keys, check_writable_folder
from fsnn.suite.runfiles import RunLockedError, describe_holder, lock_holder
from fsnn.suite.schemas import ACCELERATORS, Batches, Schema, Seed
from fsnn.suite.studies import STUDIES, StudyRun, check_study
from fsnn.suite.tasks import build_task, task_kind
from fsnn.suite.training import quiet_libraries, reuse_freed_memory

log = logging.getLogger("fsnn")

UNFINISHED = ("running", "interrupted", "failed")  # record statuses of a run that has no result to evaluate


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
    check_top_level_keys(values, app_keys("eval"))  # +studdy=energy would be taken and ignored
    if not (Path(values["run_dir"]) / ".hydra" / "config.yaml").is_file():
        raise ConfigError(
            f"run_dir: expected the folder of a train.py run (with .hydra/config.yaml), got {values['run_dir']!r}"
        )
    check_writable_folder("run_dir", values["run_dir"])  # eval/, eval.json and a study's output are written there
    run_status(Path(values["run_dir"]), values["allow_unfinished"])


def run_status(run_dir: Path, allow_unfinished: bool = False) -> str:
    """The status of the run in ``run_dir`` (its ``metrics.json``'s, ``running`` while a process holds its lock,
    ``unknown`` without a record). :class:`RunLockedError` naming the holder when a process is training it, and
    :class:`ConfigError` when its record says it never finished (``running`` with no process left: it was killed;
    ``interrupted``, ``failed``), unless ``allow_unfinished``: a study of such a run would measure a checkpoint that
    is not its result."""
    holder = lock_holder(run_dir)
    if holder is None:
        status = (read_run_record(run_dir) or {}).get("status", "unknown")
        if status in UNFINISHED and not allow_unfinished:
            why = "no process is training it: it was killed before it finished" if status == "running" else status
            raise ConfigError(
                f"run_dir: the run in {run_dir} did not finish (its metrics.json says {status!r}; {why}). Rerun its "
                "train.py command to resume it, or allow_unfinished=true evaluates its checkpoint now (recorded as "
                "unfinished in the output)"
            )
        return status
    if not allow_unfinished:
        raise RunLockedError(
            f"run folder {run_dir} is in use by {describe_holder(holder)}: its run is still training; "
            "evaluate it when it has finished, or allow_unfinished=true evaluates its checkpoint now "
            "(recorded as unfinished in the output)"
        )
    return "running"


def open_run(run_dir: Path | str, data_dir: str | None = None) -> tuple[DictConfig, dict]:
    """``(config, result config)`` of the run folder ``run_dir``: its ``.hydra/config.yaml``, checked like a
    command line before anything is built from it (only fsnn's own ``_target_`` classes, :mod:`fsnn.suite.config`), with
    this machine's ``data_dir`` when given. :class:`ConfigError` when it is missing or refused."""
    saved = Path(run_dir) / ".hydra" / "config.yaml"
    if not saved.is_file():
        raise ConfigError(
            f"run_dir: expected the folder of a train.py run (with .hydra/config.yaml), got {str(run_dir)!r}"
        )
    try:
        run_cfg = OmegaConf.load(saved)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        reason = " ".join(str(error).split())
        raise ConfigError(f"run_dir: {saved} could not be read as YAML ({type(error).__name__}: {reason})") from None
    if not isinstance(run_cfg, DictConfig):
        raise ConfigError(f"run_dir: {saved}: holds no config of a train.py run (expected a mapping, got a list)")
    run_cfg = OmegaConf.create(current_config(OmegaConf.to_container(run_cfg)))
    check_run_config(run_cfg, saved)
    if data_dir is not None:
        run_cfg.paths.data_dir = str(data_dir)
    return run_cfg, result_config(run_cfg)


def _checkpoint(run_dir: Path, checkpoint: str, config: dict) -> tuple[Path, dict]:
    """The run's ``checkpoint`` (``best`` or ``last``), verified and read without running code."""
    path = run_dir / "checkpoints" / f"{checkpoint}.ckpt"
    if not path.exists():
        found = sorted(p.stem for p in (run_dir / "checkpoints").glob("*.ckpt"))
        raise ConfigError(
            f"checkpoint={checkpoint!r}: {path} does not exist (run_dir={run_dir} has "
            f"{'checkpoints ' + ', '.join(found) if found else 'no checkpoints'}; expected best or last)"
        )
    try:
        return path, load_checkpoint(path, config)
    except CheckpointError as error:
        other = "last" if checkpoint == "best" else "best"
        raise CheckpointError(
            path,
            error.problem,
            f"checkpoint={other} tests the run's other checkpoint; "
            "rerunning its train.py command with force=true trains it again",
        ) from None


def evaluate_run(
    run_dir: Path | str,
    study: dict | None = None,
    *,
    data_dir: str | None = None,
    checkpoint: str = "best",
    accelerator: str = "auto",
    seed: int | None = None,
    limit_test_batches=None,
    allow_unfinished: bool = False,
) -> dict:
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
    check_fits(task.module, state, ckpt)
    task.module.load_state_dict(state["state_dict"])
    # a study is many passes: one tqdm bar over them instead of Lightning's bar per pass
    quiet_libraries()
    trainer = L.Trainer(
        logger=False,
        enable_checkpointing=False,
        default_root_dir=run_dir,
        accelerator=accelerator,
        devices=1,
        limit_test_batches=limit_test_batches,
        enable_progress_bar=asked is None,
        callbacks=[PercentProgressBar()] if asked is None else [],
        enable_model_summary=False,
    )
    counted = CountedTest()
    trainer.callbacks.append(counted)
    run = StudyRun(run_dir, run_cfg, kind, task, trainer, ckpt, seed, limit_test_batches, status)
    result: dict = {**run.about(), "metric_unit": METRIC_UNIT}
    if asked is None or STUDIES.meta(asked[0]).retest:
        test = run.test_pass()
        metric = task.metric
        run.clean = test[f"test/{metric}"]
        result |= {
            f"test_{metric}": run.clean,
            "test_metrics": test,
            "firing_rates": task.module.test_rates,
            "layer_order": task.module.test_layer_order,  # the order the network registers them (JSON sorts the rates)
            "encoders": describe_encoders(task.module.model),
            "device": device_description(trainer.strategy.root_device),
            "evaluated": coverage(counted, limit_test_batches, run_cfg.trainer.get("limit_test_batches")),
        }
        write_json_atomic(run_dir / "eval.json", result)
        log.info("test %s %s (%s; %s)", metric, format_percent(run.clean), ckpt, result["evaluated"]["note"])
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
    note = (
        f"the whole test split, {counted.samples} samples in {counted.batches} batches"
        if limit is None
        else f"{counted.samples} samples in the first {counted.batches} test batches (limit_test_batches={limit})"
    )
    if not same:
        run_part = "the whole split" if run_limit is None else f"limit_test_batches={run_limit}"
        note += f"; the run's own test covered {run_part}, so the two can differ"
    return {
        "split": "test",
        "batches": counted.batches,
        "samples": counted.samples,
        "limit_test_batches": limit,
        "run_limit_test_batches": run_limit,
        "as_the_run_tested": same,
        "note": note,
    }


def evaluate(cfg: DictConfig) -> dict:
    """``evaluate.py``: :func:`evaluate_run` with a composed ``conf/eval.yaml`` (``run_dir``, ``checkpoint``,
    ``study``, ``accelerator``, ``seed``, ``limit_test_batches``, ``allow_unfinished``)."""
    check_eval_config(cfg)
    quiet_libraries()
    reuse_freed_memory()
    study = OmegaConf.to_container(cfg.study, resolve=True) if cfg.get("study") else None
    outputs = ([] if study and not STUDIES.meta(study["name"]).retest else ["eval.json"]) + (
        [f"{study['name']}.json"] if study else []
    )
    # a signal stops it with one line naming what it wrote (exit 128 + n), not a success without its outputs
    with exit_on_interrupt(f"evaluate.py run_dir={cfg.run_dir}", [cfg.run_dir], outputs):
        return evaluate_run(
            cfg.run_dir,
            study,
            data_dir=cfg.paths.data_dir,
            checkpoint=cfg.checkpoint,
            accelerator=cfg.accelerator,
            seed=cfg.get("seed"),
            limit_test_batches=cfg.get("limit_test_batches"),
            allow_unfinished=cfg.get("allow_unfinished", False),
        )
