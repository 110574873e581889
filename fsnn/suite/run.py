"""The run lifecycle of ``train.py`` (and the guard of ``evaluate.py``): the checks before Hydra makes a folder, the run
folder, resume, the lock, ``metrics.json``, the post-training study and the user's errors. What is trained and tested
comes from the task the config composes (:func:`fsnn.suite.tasks.build_task`); what is measured on the trained run
afterwards, from the study seam (:func:`fsnn.suite.evaluate.evaluate_run`).

A run lives in ``results/<task_name>/<run>/`` (Hydra's output dir, named after the command's overrides by
:mod:`fsnn.suite.run_names`):
``.hydra/`` (its config), ``checkpoints/`` (``last.ckpt`` every epoch, ``best.ckpt`` on validation, both written
atomically with an integrity record, :mod:`fsnn.suite.checkpoint`), Lightning logs and ``metrics.json``. Rerunning the
command of

- a finished run (``metrics.json`` complete, same result config) prints where its result is and changes nothing
  (``force=true`` trains it again, first moving the previous generation, ``metrics.json``, checkpoints, config and
  studies, into ``previous.<n>/``: every earlier generation is kept);
- an interrupted run resumes from ``last.ckpt`` and ends bit-identical to an uninterrupted run (on a CPU);
- a run another process is training is refused, naming that process (a lock in the folder, released by the
  kernel when its holder dies).

A run folder names its own files relative to itself (the checkpoints' state, ``metrics.json``), so a copied or
moved folder resumes, tests and is evaluated from its own files. SIGTERM (a scheduler's preemption or time limit),
SIGINT (Ctrl-C) and SIGHUP stop a run at once (:mod:`fsnn.runs.interrupts`): ``metrics.json`` says ``interrupted``, the last
epoch's ``last.ckpt`` is what a rerun resumes from, and the process exits with 128 + the signal's number (143, 130).

Every value is checked before any work (:mod:`fsnn.suite.config`); a failure never overwrites a complete ``metrics.json``.
Under DDP only global rank 0 writes. Model selection uses the validation split only; the test split is evaluated
at the best-validation checkpoint (and, for reference, with the last weights).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from lightning.pytorch.plugins.environments import SLURMEnvironment
from omegaconf import DictConfig, OmegaConf

from fsnn.atomic import RunFileError, write_json_atomic, write_text_atomic
from fsnn.checks import ConfigError
from fsnn.data import DatasetDamagedError, DatasetMissingError, is_fake_dataset
from fsnn.models.poisson import describe_encoders
from fsnn.neurons.fractional import collect_alphas
from fsnn.registry import MissingExtraError
from fsnn.runs.formatting import format_percent
from fsnn.runs.interrupts import Interrupted, interruptible, submitit_requeue
from fsnn.runs.provenance import device_description, package_versions
from fsnn.runs.records import METRIC_UNIT, fitting_name, read_run_record
from fsnn.runs.renames import current_config
from fsnn.suite.callbacks import LearnedNeurons, PercentProgressBar, SpeedMonitor, describe_neurons
from fsnn.suite.checkpoint import (
    CheckpointError,
    RelativeModelCheckpoint,
    RNGStates,
    RunCheckpointIO,
    load_checkpoint,
    result_config,
    strip_non_result,
)
from fsnn.suite.config import check_config, check_launcher
from fsnn.suite.evaluate import check_eval_config, evaluate_run
from fsnn.suite.overrides import swept_groups
from fsnn.suite.run_names import folder_keys, rendered_run_name
from fsnn.suite.runfiles import (
    RunLockedError,
    relative_to_run,
    run_lock,
    set_aside,
    tree_changes,
)
from fsnn.suite.studies import check_study
from fsnn.suite.sweeps import DATA_HINT, SWEEP_PARENT, check_sweep_data, sweep_jobs_file
from fsnn.suite.tasks import build_task, task_kind
from fsnn.suite.training import NonFiniteLossError, quiet_libraries, reuse_freed_memory

log = logging.getLogger("fsnn")


# errors that are the user's to fix: one message, non-zero exit, no traceback
USER_ERRORS = (
    DatasetMissingError,
    DatasetDamagedError,
    ConfigError,
    NonFiniteLossError,
    CheckpointError,
    RunLockedError,
    MissingExtraError,
    RunFileError,
)
#: what one generation of a run is (glob patterns in its folder): ``force=true`` moves it into ``previous.<n>/``
GENERATION_FILES = (
    ".hydra",
    "metrics.json",
    "checkpoints",
    "eval.json",
    "energy.json",
    "robustness.json",
    "robustness_*.*",
)


class CheckConfig(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/hydra/default.yaml`` and ``conf/eval.yaml``): checks the
    composed config before Hydra creates any folder, and stops with one line and exit status 2: every value
    (:mod:`fsnn.suite.config`), and that dataset, backbone, task and study fit together.

    A multirun's base config (the values all its jobs share) is checked before the first job, though not the groups
    its sweep selects nor the pairing it may change; each job's own values are checked when it starts
    (:func:`train`). Its launcher's settings are checked before the launcher starts
    (:func:`fsnn.suite.config.check_launcher`), and the datasets its jobs read must be in ``paths.data_dir``
    (:func:`check_sweep_data`)."""

    def __init__(self, app: str = "train"):
        self.app = app

    def _check(self, config: DictConfig, multirun: bool = False) -> None:
        try:
            if self.app == "eval":
                check_eval_config(config)
            elif multirun:
                check_launcher(config)  # first: checking the config makes the results folder, if writable
                check_config(config, swept=swept_groups(config))
                check_sweep_data(config)
            else:
                check_config(config)
                _check_fit(config)
        except USER_ERRORS as error:  # a config, a run folder in training, a folder where metrics.json belongs
            print(f"fsnn: error: {error}", file=sys.stderr)
            raise SystemExit(2) from None

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, multirun=True)


def _study(cfg: DictConfig) -> dict | None:
    return OmegaConf.to_container(cfg.study, resolve=True) if cfg.get("study") else None


def _check_fit(cfg: DictConfig) -> None:
    """Dataset, backbone and task fit together, and the study after training fits the task and one device."""
    check_study(task_kind(cfg), _study(cfg))
    if _study(cfg) and (cfg.trainer.get("devices", 1) != 1 or cfg.trainer.get("num_nodes", 1) != 1):
        raise ConfigError(
            f"study={cfg.study.name}: after a multi-device run it runs on its own: "
            "python evaluate.py run_dir=<run> study=..."
        )


def launch_rank_zero() -> bool:
    """Whether this process is global rank 0 of its launch, known before a Trainer exists: the processes Lightning
    starts for DDP, and the tasks srun starts, carry their rank in the environment."""
    return all(int(os.environ.get(var) or 0) == 0 for var in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"))


def _write_record(run_dir: Path, record: dict) -> None:
    """Write ``metrics.json``, unless that would replace a complete record by an unfinished or failed one."""
    existing = read_run_record(run_dir)
    if existing and existing.get("status") == "complete" and record.get("status") != "complete":
        return
    write_json_atomic(run_dir / "metrics.json", record)


def _finished(run_dir: Path, cfg: DictConfig, config: dict) -> dict | None:
    """The record of a finished run of this config in ``run_dir`` whose checkpoints are intact, or ``None`` (nothing
    finished there, or ``force=true``). A finished run of another config is a :class:`ConfigError`. A key fsnn's
    configs gained after the run was recorded is no difference: a new key's default keeps what runs did before it
    (``authors_*`` options off, ``tau_lr_scale`` 1), and a value given on the command line is in the folder's name."""
    record = read_run_record(run_dir)
    if record is None or record.get("status") != "complete" or cfg.get("force"):
        return None
    changes = tree_changes(strip_non_result(current_config(record.get("config") or {})), config, added=False)
    if changes:
        shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")
        raise ConfigError(
            f"{run_dir} holds a finished run of another config ({shown}); force=true trains this "
            "config in its place (keeping the finished one in previous.<n>/), or run_name=<name> "
            "trains it in a folder of its own"
        )
    for path in sorted((run_dir / "checkpoints").glob("*.ckpt")):
        try:
            load_checkpoint(path, config)
        except CheckpointError as error:
            raise CheckpointError(
                path,
                error.problem,
                "the run is finished and its metrics.json is kept; delete the "
                "file if you do not need it (evaluate.py and its studies read best.ckpt), or "
                "force=true trains the run again",
            ) from None
    return record


def _set_aside(run_dir: Path) -> None:
    """``force=true``: move the previous generation of the run (:data:`GENERATION_FILES`) into ``previous.<n>/``,
    after every earlier one, so that the new run starts from scratch and nothing finished is ever lost."""
    kept = set_aside(run_dir, GENERATION_FILES)
    if kept is not None:
        log.info(
            "force=true: the previous generation of this run (%s) is kept in %s",
            ", ".join(sorted(p.name for p in kept.iterdir())),
            kept,
        )


def _save_config(run_dir: Path, cfg: DictConfig) -> None:
    """``.hydra/{config,overrides,hydra}.yaml`` as Hydra writes them (``hydra.output_subdir`` is null, so that a
    rerun of a finished run changes nothing), written atomically."""
    folder = run_dir / ".hydra"
    write_text_atomic(folder / "config.yaml", OmegaConf.to_yaml(cfg))
    write_text_atomic(folder / "overrides.yaml", OmegaConf.to_yaml(HydraConfig.get().overrides.task))
    write_text_atomic(folder / "hydra.yaml", OmegaConf.to_yaml(HydraConfig.instance().cfg))


def _trainer(cfg: DictConfig, run_dir: Path, callbacks: list, config: dict, module: L.LightningModule) -> L.Trainer:
    logger = hydra.utils.instantiate(cfg.logger) if cfg.get("logger") else False
    options = {k: v for k, v in OmegaConf.to_container(cfg.trainer, resolve=True).items() if v is not None}
    # Lightning's summary table has a FLOPs column that stays 0 without an example input; _fit logs the size instead
    options.setdefault("enable_model_summary", False)
    if options.get("enable_progress_bar", True):
        callbacks = [*callbacks, PercentProgressBar()]
    quiet_libraries()
    plugins = [RunCheckpointIO(config, module)]
    if SLURMEnvironment.detect():
        # a requeued job resumes from last.ckpt; Lightning's own requeue would save a mid-epoch checkpoint
        plugins.append(SLURMEnvironment(auto_requeue=False))
    # the data modules give each rank its share themselves (fsnn.suite.training.SplitDataModule)
    options["use_distributed_sampler"] = False
    return L.Trainer(default_root_dir=run_dir, logger=logger, callbacks=callbacks, plugins=plugins, **options)


def _new_record(cfg: DictConfig, run_dir: Path) -> dict:
    """The ``metrics.json`` of a run that starts: what it is (config, overrides, choices, seed, versions)."""
    hydra_cfg = HydraConfig.get()
    try:
        config = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - a failing interpolation is reported by check_config; keep the config as given
        config = OmegaConf.to_container(cfg, resolve=False)
    record = {
        "status": "running",
        "task": cfg.get("task_name"),
        "run": run_dir.name,
        "overrides": list(hydra_cfg.overrides.task),
        "choices": dict(hydra_cfg.runtime.choices),
        "config": relative_to_run(config, run_dir),
        "seed": cfg.get("seed"),
        "recipe": cfg.get("recipe"),
        "versions": package_versions(),
        "fake_data": is_fake_dataset(cfg.dataset.name, cfg.paths.data_dir),  # a fsnn-fixtures fake, never a result
    }
    whole = rendered_run_name(cfg.get("run_name"), hydra_cfg.overrides.task, *folder_keys(cfg, hydra_cfg))
    if whole != run_dir.name and fitting_name(whole) == run_dir.name:  # a name too long for a folder, shortened
        record["run_whole_name"] = whole
        log.info(
            "run folder %s: its whole name (%d bytes, recorded in metrics.json as run_whole_name) is longer "
            "than a file system takes",
            run_dir.name,
            len(whole.encode()),
        )
    return record


def train(cfg: DictConfig) -> float:
    """Fit, select on validation, test; write ``metrics.json``. Returns the best validation metric (the objective of
    a sweeper). A finished run of the same config is not trained again (see the module's docstring).

    SIGTERM, SIGINT or SIGHUP stops the run: ``metrics.json`` says ``interrupted`` and the process exits with status
    128 + the signal's number; rerunning the command resumes from the last epoch's ``last.ckpt``. Under submitit a
    SIGTERM (SLURM's preemption) then requeues the job (:func:`_hand_to_submitit`), which resumes it."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    quiet_libraries()
    reuse_freed_memory()
    if jobs := sweep_jobs_file():  # a job of a sweep: listed for its summary (SweepSummary)
        with open(jobs, "a") as listed:
            listed.write(f"{run_dir.resolve()}\n")
    zero = launch_rank_zero()
    record = _new_record(cfg, run_dir) if zero else None
    try:
        with interruptible():
            return _train(cfg, run_dir, zero, record)
    except Interrupted as interrupted:
        if zero:
            print(
                f"fsnn: {run_dir} {interrupted}; rerunning the command resumes it from its last finished epoch "
                "(checkpoints/last.ckpt)",
                file=sys.stderr,
                flush=True,
            )
        if interrupted.signum == signal.SIGTERM and (requeue := submitit_requeue()) is not None:
            _hand_to_submitit(requeue, run_dir)
        if os.environ.get(SWEEP_PARENT, str(os.getpid())) != str(os.getpid()):
            # a joblib worker would take the sweep's next job: it ends, as its sweep does (StopJobs)
            os._exit(128 + interrupted.signum)
        raise SystemExit(128 + interrupted.signum) from None


def _hand_to_submitit(requeue, run_dir: Path) -> None:
    """A SIGTERM under submitit (SLURM's preemption): once the run has stopped (its record says ``interrupted``),
    submitit's own requeue checkpoints the job's submission, requeues the job, whose run resumes from its last
    epoch, and exits. When it cannot (timed out too often, or a cancelled job ``scontrol`` will not requeue), one
    line says why and the command exits as on any SIGTERM."""
    print(f"fsnn: {run_dir}: preempted under submitit, handing the job to submitit's requeue", file=sys.stderr)
    try:
        requeue(signal.SIGTERM, None)
    except Exception as error:  # noqa: BLE001 - whatever submitit or scontrol raise, the run itself is safe
        print(f"fsnn: {run_dir}: not requeued ({type(error).__name__}: {error})", file=sys.stderr, flush=True)


def _train(cfg: DictConfig, run_dir: Path, zero: bool, record: dict | None) -> float:
    taken = False  # whether this process has taken the run over: only then is its record this process's to write
    try:
        check_config(cfg)
        _check_fit(cfg)
        config = result_config(cfg)
        if not zero:  # DDP ranks > 0 train and test with rank 0, which alone reads and writes the run's files
            return _fit(cfg, run_dir, config, _resume_point(run_dir), None)
        if (done := _finished(run_dir, cfg, config)) is None:
            with run_lock(run_dir):
                if (done := _finished(run_dir, cfg, config)) is None:  # not finished while we waited for the lock
                    if cfg.get("force"):
                        _set_aside(run_dir)
                    resume = _resume_point(run_dir)
                    if resume is not None:
                        _verify_resume_point(resume, config)
                    taken = True
                    _save_config(run_dir, cfg)
                    best = _fit(cfg, run_dir, config, resume, record)
        if done is not None:
            best = _report_finished(run_dir, done)
    except BaseException as error:
        # before this process took the run over (a bad value, a checkpoint of another config to resume from), a
        # record already in the folder is left as it was: an interrupted run stays resumable, a finished one finished
        ours = taken or _nothing_recorded(run_dir)
        if zero and ours and not isinstance(error, RunLockedError):  # another process's run is not ours to record
            stopped = isinstance(error, (Interrupted, KeyboardInterrupt, SystemExit))  # SystemExit: a scheduler's
            record.update(
                {"status": "interrupted" if stopped else "failed", "error": f"{type(error).__name__}: {error}"}
            )
            with contextlib.suppress(RunFileError):  # a full disk, or a folder where metrics.json belongs: reported
                _write_record(run_dir, record)
        raise
    if _study(cfg):  # on the trained (or earlier finished) run, as evaluate.py would
        evaluate_run(
            run_dir,
            _study(cfg),
            data_dir=cfg.paths.data_dir,
            accelerator=cfg.trainer.accelerator,
            limit_test_batches=cfg.trainer.get("limit_test_batches"),
        )
    return best


def _nothing_recorded(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds no record a failure could overwrite (no readable ``metrics.json``)."""
    try:
        return read_run_record(run_dir) is None
    except RunFileError:  # a folder in its place: reported, never written over
        return False


def _report_finished(run_dir: Path, record: dict) -> float:
    metric = record.get("metric", "acc")
    print(
        f"fsnn: {run_dir} is finished (test {metric} {format_percent(record.get(f'test_{metric}'))}); nothing to do. "
        f"Its result: {run_dir / 'metrics.json'} (force=true trains it again)"
    )
    return record.get(f"val_{metric}_best")


def _resume_point(run_dir: Path) -> Path | None:
    """The checkpoint an interrupted run resumes from: ``last.ckpt``, else ``best.ckpt`` (a whole checkpoint of an
    epoch's end too, left alone when ``last.ckpt`` was deleted because damaged or a kill fell between the two writes
    of the first epoch: the run still ends as it would have), else ``None``."""
    last, best = run_dir / "checkpoints" / "last.ckpt", run_dir / "checkpoints" / "best.ckpt"
    return last if last.exists() else best if best.exists() else None


def _verify_resume_point(resume: Path, config: dict) -> None:
    """Read the checkpoint to resume from before any data is loaded; Lightning reads it again through
    :class:`RunCheckpointIO`."""
    try:
        load_checkpoint(resume, config)
    except CheckpointError as error:
        best = resume.with_name("best.ckpt")
        then = "resumes from best.ckpt" if resume.name == "last.ckpt" and best.exists() else "starts again from epoch 0"
        raise CheckpointError(
            resume,
            error.problem,
            f"delete it and rerun: the run then {then} and ends as it "
            "would have (training is deterministic); or force=true starts again",
        ) from None


def _fit(cfg: DictConfig, run_dir: Path, config: dict, resume: Path | None, record: dict | None) -> float:
    """Train (resuming from ``resume``), select on validation, test. ``record``: the ``metrics.json`` to complete
    (``None`` on DDP ranks > 0, which write nothing)."""
    start = time.perf_counter()
    checkpoints = run_dir / "checkpoints"
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module, data, metric = build_task(cfg)
    log.info(
        "model: %s, %s parameters",
        type(module.model).__name__,
        f"{sum(p.numel() for p in module.model.parameters()):,}",
    )
    # best first: when both are saved at an epoch's end, last.ckpt never points at a best.ckpt not yet written
    best_cb = RelativeModelCheckpoint(
        dirpath=checkpoints,
        filename="best",
        monitor=f"val/{metric}",
        mode="max",
        save_top_k=1,
        enable_version_counter=False,
    )
    last_cb = RelativeModelCheckpoint(dirpath=checkpoints, filename="last", save_top_k=1, enable_version_counter=False)
    speed, learned = SpeedMonitor(), LearnedNeurons()
    stopper = hydra.utils.instantiate(cfg.early_stopping, metric=metric) if cfg.get("early_stopping") else None
    callbacks = [best_cb, last_cb, RNGStates(), speed, learned, *([stopper] if stopper else [])]
    trainer = _trainer(cfg, run_dir, callbacks, config, module)
    if record is not None:
        for stale in checkpoints.glob(".*.tmp-*"):  # a write cut short by a kill (the lock keeps writers out)
            stale.unlink()
        record["device"] = device_description(trainer.strategy.root_device)
        # what Lightning runs, which is not always what was asked: 16-mixed on a CPU runs as bf16-mixed
        record["precision"] = trainer.precision
        if str(cfg.trainer.get("precision")) not in (trainer.precision, trainer.precision.split("-")[0]):
            log.info(
                "trainer.precision=%s runs as %s on %s (recorded in metrics.json)",
                cfg.trainer.get("precision"),
                trainer.precision,
                record["device"],
            )
        record["resumed_from"] = None if resume is None else os.path.relpath(resume, run_dir)
        _write_record(run_dir, record)
    trainer.fit(module, datamodule=data, ckpt_path=resume)
    # before testing the best checkpoint restores the callbacks' state of its epoch
    by_epoch, stop_reason = list(learned.epochs), _stop_reason(trainer, stopper)
    stopping = stopper.summary() if stopper else None

    last_val = trainer.validate(module, datamodule=data, verbose=False)[0][f"val/{metric}"]
    speed.reset_test()  # test throughput from this pass alone (no firing-rate hooks)
    module.measure_rates = False
    last_test = trainer.test(module, datamodule=data, verbose=False)[0]
    speeds = speed.summary()
    best_path = best_cb.best_model_path or last_cb.best_model_path  # no validation: the last weights
    module.measure_rates = True
    best_test = trainer.test(module, datamodule=data, ckpt_path=best_path, verbose=False)[0]
    best_val = float(best_cb.best_model_score) if best_cb.best_model_score is not None else last_val
    if record is not None and trainer.is_global_zero:
        record.update(
            {
                "status": "complete",
                "metric": metric,
                "metric_unit": METRIC_UNIT,
                "epochs": trainer.current_epoch,  # trained, up to trainer.max_epochs
                "stop_reason": stop_reason,
                "early_stopping": stopping,
                "best_epoch": load_checkpoint(best_path)["epoch"] + 1,  # epochs trained up to the best checkpoint
                f"val_{metric}_best": best_val,
                f"val_{metric}_last": last_val,
                f"test_{metric}": best_test[f"test/{metric}"],  # at the best-validation checkpoint
                f"test_{metric}_last": last_test[f"test/{metric}"],
                "test_metrics": best_test,
                "best_checkpoint": os.path.relpath(best_path, run_dir),  # relative: the run folder can move
                "split_sizes": data.split_sizes(),
                "firing_rates": module.test_rates,
                "layer_order": module.test_layer_order,  # the order the network registers them (JSON sorts the rates)
                "alphas": collect_alphas(module.model),
                "neurons": describe_neurons(module.model),  # at the best checkpoint: tau, alpha, the engine it ran
                "encoders": describe_encoders(module.model),  # the Poisson samplers that drew the run's input spikes
                "neurons_by_epoch": by_epoch,
                "num_parameters": sum(p.numel() for p in module.model.parameters()),
                "world_size": trainer.world_size,
                **speeds,
                "wall_time_s": time.perf_counter() - start,
            }
        )
        _write_record(run_dir, record)
        log.info(
            "best val %s %s | test %s at best val %s | last test %s",
            metric,
            format_percent(best_val),
            metric,
            format_percent(record[f"test_{metric}"]),
            format_percent(record[f"test_{metric}_last"]),
        )
        log.info("metrics: %s", run_dir / "metrics.json")
    return best_val


def _stop_reason(trainer: L.Trainer, stopper) -> str:
    """Why training ended: the early stopping's reason (``patience_exhausted``, ``non_finite_metric``), else
    ``max_epochs`` or ``max_steps``, whichever limit of the Trainer it reached."""
    if stopper is not None and stopper.stopped:
        return stopper.summary()["reason"]
    return "max_epochs" if trainer.current_epoch >= trainer.max_epochs else "max_steps"


def run_guarded(fn, cfg: DictConfig):
    """Run ``fn(cfg)``; a user error becomes one message on stderr and exit status 2.

    Inside a multirun (``-m`` or an experiment with ``hydra.mode: MULTIRUN``) a job's failure must not stop
    the other jobs, so a user error is printed the same way when it happens but then raised as a compact
    Hydra error instead of exiting: every launcher records it as that job's failure (its ``metrics.json``
    says ``status: failed`` with the error) and runs the remaining jobs. Once they are done the basic sweeper
    reports the first failed job's overrides and error, without a traceback, and the multirun exits 1. The
    Optuna sweeper instead tells the failure to the study as a failed trial and carries on up to its
    ``max_failure_rate``. Any other exception (a bug) keeps its traceback in a single run; in a multirun it is one
    line too, and its traceback goes to the job's log file.
    """
    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        return fn(cfg)
    except USER_ERRORS as error:
        message = f"fsnn: error: {error}"
        if isinstance(error, DatasetMissingError):
            message += f"\n({DATA_HINT}; paths.data_dir is {cfg.paths.data_dir})"
        print(message, file=sys.stderr)
        if multirun:
            # an Exception, unlike SystemExit, is caught by Hydra's run_job and kept as the job's result
            raise CompactHydraException(message) from error
        raise SystemExit(2) from None
    except Exception as error:
        if not multirun:
            raise
        files = [
            h
            for h in logging.getLogger().handlers
            if isinstance(h, logging.FileHandler) and h.baseFilename != os.devnull
        ]  # pytest adds /dev/null
        for handler in files:  # the job's log file, not the console
            handler.handle(log.makeRecord(log.name, logging.ERROR, __file__, 0, "job failed", None, sys.exc_info()))
        where = f"traceback in {files[0].baseFilename}" if files else "no log file for its traceback"
        message = f"fsnn: error: {type(error).__name__}: {error} ({where})"
        print(message, file=sys.stderr)
        raise CompactHydraException(message) from error
