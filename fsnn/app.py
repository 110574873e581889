"""What ``train.py`` and ``evaluate.py`` do with a composed Hydra config: the run folder, resume, ``metrics.json``,
the robustness study's loop and the user's errors. What is trained and tested comes from the task the config
composes (:func:`fsnn.tasks.build_task`, by the dataset's kind of data).

A run lives in ``results/<task_name>/<run>/`` (Hydra's output dir, named after the command's overrides):
``.hydra/`` (its config), ``checkpoints/`` (``last.ckpt`` every epoch, ``best.ckpt`` on validation, both written
atomically with an integrity record, :mod:`fsnn.checkpoint`), Lightning logs and ``metrics.json``. Rerunning the
command of

- a finished run (``metrics.json`` complete, same result config) prints where its result is and changes nothing
  (``force=true`` trains it again, keeping the previous ``metrics.json`` and checkpoints beside the new ones);
- an interrupted run resumes from ``last.ckpt`` and ends bit-identical to an uninterrupted run (on a CPU);
- a run another process is training is refused, naming that process (a lock in the folder, released by the
  kernel when its holder dies).

Every value is checked before any work (:mod:`fsnn.config`); a failure never overwrites a complete ``metrics.json``.
Under DDP only global rank 0 writes. Model selection uses the validation split only; the test split is evaluated
at the best-validation checkpoint (and, for reference, with the last weights).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import hydra
import lightning as L
from filelock import FileLock, Timeout
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.plugins.environments import SLURMEnvironment
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from fsnn.checkpoint import CheckpointError, RNGStates, RunCheckpointIO, load_checkpoint
from fsnn.config import (check_config, check_eval_config, check_run_config, config_changes, result_config,
                         strip_non_result)
from fsnn.data import DatasetMissingError
from fsnn.neurons import collect_alphas
from fsnn.registry import MissingExtraError
from fsnn.results import (METRIC_UNIT, device_description, package_versions, percent, write_json_atomic,
                          write_text_atomic)
from fsnn.robustness import KINDS, check_corruption, robustness_score
from fsnn.tasks import ConfigError, Task, build_task, task_kind
from fsnn.training import NonFiniteLossError, PercentProgressBar, SpeedMonitor, firing_rates, quiet_lightning

log = logging.getLogger("fsnn")


class RunLockedError(RuntimeError):
    """Another process is training in the run folder."""


# errors that are the user's to fix: one message, non-zero exit, no traceback
USER_ERRORS = (DatasetMissingError, ConfigError, NonFiniteLossError, CheckpointError, RunLockedError,
               MissingExtraError)
#: what ``force=true`` keeps of the previous run, and under which name
PREVIOUS = {"metrics.json": "metrics.previous.json", "checkpoints": "checkpoints.previous"}


def run_dir_name(run_name: str | None, overrides: str) -> str:
    """Folder name of a run: ``run_name`` if given, else its command-line overrides, else ``default``."""
    name = run_name or overrides or "default"
    return name.replace("/", "_")


def launch_rank_zero() -> bool:
    """Whether this process is global rank 0 of its launch, known before a Trainer exists: the processes Lightning
    starts for DDP, and the tasks srun starts, carry their rank in the environment."""
    return all(int(os.environ.get(var) or 0) == 0 for var in ("RANK", "LOCAL_RANK", "NODE_RANK", "SLURM_PROCID"))


def _umask_mode(mode: int = 0o666) -> int:
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


@contextmanager
def run_lock(run_dir: Path):
    """Hold ``<run_dir>/.lock`` (``filelock``, an ``flock`` the kernel drops when its holder dies, so a lock left by
    a killed run is taken over) for the block; the holder's pid, host, start time and command are written into it.
    :class:`RunLockedError` naming the holder when another live process has it."""
    path = run_dir / ".lock"
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv),
              "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}

    def write_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)

    run_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=0, mode=_umask_mode(), on_acquired=write_holder)
    try:
        lock.acquire()
    except Timeout:
        try:
            other = json.loads(path.read_text())
        except (OSError, ValueError):
            other = {}
        who = (f"pid {other.get('pid', '?')} on {other.get('host', '?')} since {other.get('since', '?')} "
               f"({other.get('command', '?')})")
        raise RunLockedError(f"run folder {run_dir} is in use by {who}; wait for it to finish or stop it") from None
    try:
        yield
    finally:
        lock.release()


def _read_metrics(run_dir: Path) -> dict | None:
    try:
        record = json.loads((run_dir / "metrics.json").read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _write_record(run_dir: Path, record: dict) -> None:
    """Write ``metrics.json``, unless that would replace a complete record by an unfinished or failed one."""
    existing = _read_metrics(run_dir)
    if existing and existing.get("status") == "complete" and record.get("status") != "complete":
        return
    write_json_atomic(run_dir / "metrics.json", record)


def _finished(run_dir: Path, cfg: DictConfig, config: dict) -> dict | None:
    """The record of a finished run of this config in ``run_dir`` whose checkpoints are intact, or ``None`` (nothing
    finished there, or ``force=true``). A finished run of another config is a :class:`ConfigError`."""
    record = _read_metrics(run_dir)
    if record is None or record.get("status") != "complete" or cfg.get("force"):
        return None
    changes = config_changes(strip_non_result(record.get("config") or {}), config)
    if changes:
        shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")
        raise ConfigError(f"{run_dir} holds a finished run of another config ({shown}); force=true trains this "
                          "config in its place (keeping the finished one as metrics.previous.json and "
                          "checkpoints.previous/), or run_name=<name> trains it in a folder of its own")
    for path in sorted((run_dir / "checkpoints").glob("*.ckpt")):
        try:
            load_checkpoint(path, config)
        except CheckpointError as error:
            raise CheckpointError(path, error.problem, "the run is finished and its metrics.json is kept; delete the "
                                  "file if you do not need it (evaluate.py and energy.py read best.ckpt), or "
                                  "force=true trains the run again") from None
    return record


def _set_aside(run_dir: Path) -> None:
    """``force=true``: keep the previous result as ``metrics.previous.json`` and ``checkpoints.previous/`` (replacing
    an older one), so that the new run starts from scratch and a failure of it loses nothing."""
    for name, previous in PREVIOUS.items():
        source, target = run_dir / name, run_dir / previous
        if source.exists():
            if target.is_dir():
                shutil.rmtree(target)
            os.replace(source, target)
            log.info("force=true: the previous %s is kept as %s", name, target)


def _save_config(run_dir: Path, cfg: DictConfig) -> None:
    """``.hydra/{config,overrides,hydra}.yaml`` as Hydra writes them (``hydra.output_subdir`` is null, so that a
    rerun of a finished run changes nothing), written atomically."""
    folder = run_dir / ".hydra"
    write_text_atomic(folder / "config.yaml", OmegaConf.to_yaml(cfg))
    write_text_atomic(folder / "overrides.yaml", OmegaConf.to_yaml(HydraConfig.get().overrides.task))
    write_text_atomic(folder / "hydra.yaml", OmegaConf.to_yaml(HydraConfig.instance().cfg))


def _trainer(cfg: DictConfig, run_dir: Path, callbacks: list, config: dict) -> L.Trainer:
    logger = hydra.utils.instantiate(cfg.logger) if cfg.get("logger") else False
    options = {k: v for k, v in OmegaConf.to_container(cfg.trainer, resolve=True).items() if v is not None}
    # Lightning's summary table has a FLOPs column that stays 0 without an example input; _fit logs the size instead
    options.setdefault("enable_model_summary", False)
    if options.get("enable_progress_bar", True):
        callbacks = [*callbacks, PercentProgressBar()]
    quiet_lightning()
    plugins = [RunCheckpointIO(config)]
    if SLURMEnvironment.detect():
        # a requeued job resumes from last.ckpt; Lightning's own requeue would save a mid-epoch checkpoint
        plugins.append(SLURMEnvironment(auto_requeue=False))
    # the data modules give each rank its share themselves (fsnn.training.SplitDataModule)
    options["use_distributed_sampler"] = False
    return L.Trainer(default_root_dir=run_dir, logger=logger, callbacks=callbacks, plugins=plugins, **options)


def _sum_over_ranks(trainer: L.Trainer):
    return lambda totals: trainer.strategy.reduce(totals, reduce_op="sum")


def _new_record(cfg: DictConfig, run_dir: Path) -> dict:
    """The ``metrics.json`` of a run that starts: what it is (config, overrides, choices, seed, versions)."""
    hydra_cfg = HydraConfig.get()
    try:
        config = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - a failing interpolation is reported by check_config; keep the config as given
        config = OmegaConf.to_container(cfg, resolve=False)
    return {"status": "running", "task": cfg.get("task_name"), "run": run_dir.name,
            "overrides": list(hydra_cfg.overrides.task), "choices": dict(hydra_cfg.runtime.choices),
            "config": config, "seed": cfg.get("seed"), "recipe": cfg.get("recipe"), "versions": package_versions()}


def train(cfg: DictConfig) -> float:
    """Fit, select on validation, test; write ``metrics.json``. Returns the best validation metric (the objective of
    a sweeper). A finished run of the same config is not trained again (see the module's docstring)."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    zero = launch_rank_zero()
    record = _new_record(cfg, run_dir) if zero else None
    try:
        check_config(cfg)
        config = result_config(cfg)
        if not zero:  # DDP ranks > 0 train and test with rank 0, which alone reads and writes the run's files
            return _fit(cfg, run_dir, config, _resume_point(run_dir), None)
        if (done := _finished(run_dir, cfg, config)) is not None:
            return _report_finished(run_dir, done)
        with run_lock(run_dir):
            if (done := _finished(run_dir, cfg, config)) is not None:  # finished while we waited for the lock
                return _report_finished(run_dir, done)
            if cfg.get("force"):
                _set_aside(run_dir)
            resume = _resume_point(run_dir)
            if resume is not None:
                _verify_resume_point(resume, config)
            _save_config(run_dir, cfg)
            return _fit(cfg, run_dir, config, resume, record)
    except BaseException as error:
        if zero and not isinstance(error, RunLockedError):  # the other process's run is not ours to record
            record.update({"status": "failed", "error": f"{type(error).__name__}: {error}"})
            _write_record(run_dir, record)
        raise


def _report_finished(run_dir: Path, record: dict) -> float:
    metric = record.get("metric", "acc")
    print(f"fsnn: {run_dir} is finished (test {metric} {percent(record.get(f'test_{metric}'))}); nothing to do. Its result: "
          f"{run_dir / 'metrics.json'} (force=true trains it again)")
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
        raise CheckpointError(resume, error.problem, f"delete it and rerun: the run then {then} and ends as it "
                              "would have (training is deterministic); or force=true starts again") from None


def _fit(cfg: DictConfig, run_dir: Path, config: dict, resume: Path | None, record: dict | None) -> float:
    """Train (resuming from ``resume``), select on validation, test. ``record``: the ``metrics.json`` to complete
    (``None`` on DDP ranks > 0, which write nothing)."""
    start = time.perf_counter()
    checkpoints = run_dir / "checkpoints"
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    module, data, metric = build_task(cfg)
    log.info("model: %s, %s parameters", type(module.model).__name__,
             f"{sum(p.numel() for p in module.model.parameters()):,}")
    # best first: when both are saved at an epoch's end, last.ckpt never points at a best.ckpt not yet written
    best_cb = ModelCheckpoint(dirpath=checkpoints, filename="best", monitor=f"val/{metric}", mode="max",
                              save_top_k=1, enable_version_counter=False)
    last_cb = ModelCheckpoint(dirpath=checkpoints, filename="last", save_top_k=1, enable_version_counter=False)
    speed = SpeedMonitor()
    trainer = _trainer(cfg, run_dir, [best_cb, last_cb, RNGStates(), speed], config)
    if record is not None:
        for stale in checkpoints.glob(".*.tmp-*"):  # a write cut short by a kill (the lock keeps writers out)
            stale.unlink()
        record["device"] = device_description(trainer.strategy.root_device)
        record["resumed_from"] = None if resume is None else str(resume)
        _write_record(run_dir, record)
    trainer.fit(module, datamodule=data, ckpt_path=resume)

    last_val = trainer.validate(module, datamodule=data, verbose=False)[0][f"val/{metric}"]
    speed.reset_test()  # test throughput from this pass alone (no firing-rate hooks)
    last_test = trainer.test(module, datamodule=data, verbose=False)[0]
    speeds = speed.summary()
    best_path = best_cb.best_model_path or last_cb.best_model_path  # no validation: the last weights
    with firing_rates(module.model, _sum_over_ranks(trainer)) as rates:
        best_test = trainer.test(module, datamodule=data, ckpt_path=best_path, verbose=False)[0]
    best_val = float(best_cb.best_model_score) if best_cb.best_model_score is not None else last_val
    if record is not None and trainer.is_global_zero:
        record.update({
            "status": "complete",
            "metric": metric,
            "metric_unit": METRIC_UNIT,
            "epochs": trainer.current_epoch,
            f"val_{metric}_best": best_val,
            f"val_{metric}_last": last_val,
            f"test_{metric}": best_test[f"test/{metric}"],  # at the best-validation checkpoint
            f"test_{metric}_last": last_test[f"test/{metric}"],
            "test_metrics": best_test,
            "best_checkpoint": os.path.relpath(best_path, run_dir),  # relative: the run folder can move
            "split_sizes": data.split_sizes(),
            "firing_rates": rates,
            "alphas": collect_alphas(module.model),
            "num_parameters": sum(p.numel() for p in module.model.parameters()),
            "world_size": trainer.world_size,
            **speeds,
            "wall_time_s": time.perf_counter() - start,
        })
        _write_record(run_dir, record)
        log.info("best val %s %s | test %s at best val %s | last test %s", metric, percent(best_val), metric,
                 percent(record[f"test_{metric}"]), percent(record[f"test_{metric}_last"]))
        log.info("metrics: %s", run_dir / "metrics.json")
    return best_val


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


def _finished_run(cfg: DictConfig) -> tuple[Path, DictConfig, Path, dict]:
    """``(run_dir, the run's checked config with this machine's data_dir, checkpoint path, result config)``;
    :class:`ConfigError` when the folder or the checkpoint is missing."""
    run_dir = Path(cfg.run_dir)
    run_cfg, config = open_run(run_dir, cfg.paths.data_dir)
    ckpt = run_dir / "checkpoints" / f"{cfg.checkpoint}.ckpt"
    if not ckpt.exists():
        found = sorted(p.stem for p in (run_dir / "checkpoints").glob("*.ckpt"))
        raise ConfigError(f"checkpoint={cfg.checkpoint!r}: {ckpt} does not exist (run_dir={run_dir} has "
                          f"{'checkpoints ' + ', '.join(found) if found else 'no checkpoints'}; expected best or last)")
    return run_dir, run_cfg, ckpt, config


def _verify_for_evaluation(ckpt: Path, config: dict, checkpoint: str) -> None:
    try:
        load_checkpoint(ckpt, config)
    except CheckpointError as error:
        other = "last" if checkpoint == "best" else "best"
        raise CheckpointError(ckpt, error.problem, f"checkpoint={other} tests the run's other checkpoint; "
                              "rerunning its train.py command with force=true trains it again") from None


def _robustness_plan(cfg: DictConfig, run_cfg: DictConfig) -> dict[str, tuple[list[float], dict]]:
    """``{corruption: (levels, options)}`` of ``cfg.robustness``, checked against the run before any data is loaded
    (``{}`` for ``robustness=none``)."""
    spec = OmegaConf.to_container(cfg.robustness, resolve=True) if cfg.get("robustness") else {}
    if not spec:
        return {}
    corruptions = spec.get("corruptions")
    if not corruptions:
        raise ConfigError(f"robustness={spec.get('name')!r} lists no corruptions (robustness.corruptions is empty)")
    kind = task_kind(run_cfg)
    if kind.ROBUSTNESS is None:
        raise ConfigError(f"robustness={spec.get('name')!r}: run_dir={cfg.run_dir} is a task={run_cfg.task} run; "
                          "the robustness study covers vision and node-classification runs")
    plan = {}
    for name, entry in corruptions.items():
        entry = entry or {}
        extra = sorted(set(entry) - {"levels", "options"})
        if extra:
            raise ConfigError(f"robustness.corruptions.{name}: unknown keys {extra}; expected levels and options")
        options = entry.get("options") or {}
        try:
            plan[name] = (check_corruption(kind.ROBUSTNESS, name, entry.get("levels"), options), options)
        except ValueError as error:
            hint = "" if name in KINDS[kind.ROBUSTNESS] else (
                f" (run_dir={cfg.run_dir} is a {kind.ROBUSTNESS} run on {run_cfg.dataset.name}; "
                f"robustness={kind.STUDY} fits it)")
            raise ConfigError(f"robustness.corruptions.{name}: {error}{hint}") from None
    return plan


def _test_pass(trainer: L.Trainer, module: L.LightningModule, seed: int, **data) -> dict[str, float]:
    """One test pass, seeded, so that every pass of a study draws the same Poisson spikes and spike noise."""
    L.seed_everything(seed, workers=True, verbose=False)
    return trainer.test(module, verbose=False, **data)[0]


def _run_config(run_dir: Path, run_cfg: DictConfig) -> dict:
    """The run's resolved config as ``train`` recorded it in ``metrics.json`` (else resolved here)."""
    try:
        return json.loads((run_dir / "metrics.json").read_text())["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return OmegaConf.to_container(run_cfg, resolve=True)


def _robustness(cfg: DictConfig, run_dir: Path, run_cfg: DictConfig, task: Task, trainer: L.Trainer,
                plan: dict, clean: float, seed: int) -> dict:
    """Every corruption at every level of ``plan``; writes ``robustness.json`` and its figures into ``run_dir``.

    Per corruption: the metric at each level and the paper's score ``100 * mean_i(acc_i) / clean``
    (:func:`fsnn.robustness.robustness_score`; ``null`` when the clean metric is 0).
    """
    from fsnn.figures import robustness_figures  # matplotlib only for a robustness study

    start = time.perf_counter()
    metric = task.metric

    def run_pass(datamodule) -> float:
        return _test_pass(trainer, task.module, seed, datamodule=datamodule)[f"test/{metric}"]

    test = task_kind(run_cfg).corrupted_tester(run_cfg, task, seed, run_pass)
    corruptions = {}
    with tqdm(total=sum(len(levels) for levels, _ in plan.values()), desc="robustness", unit="test pass") as bar:
        for name, (levels, options) in plan.items():
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
        "robustness": cfg.robustness.get("name"), "run_dir": str(run_dir), "checkpoint": cfg.checkpoint,
        "metric": metric, "metric_unit": METRIC_UNIT, "clean": clean, "seed": seed, "limit_test_batches": cfg.get("limit_test_batches"),
        "corruptions": corruptions, "config": _run_config(run_dir, run_cfg),
        "device": device_description(trainer.strategy.root_device), "versions": package_versions(),
        "wall_time_s": time.perf_counter() - start,
    }
    write_json_atomic(run_dir / "robustness.json", record)
    log.info("robustness: %s; scores %s", run_dir / "robustness.json",
             {name: c["score"] for name, c in corruptions.items()})
    for path in robustness_figures([record], run_dir, echo=log.info):
        log.info("figure: %s", path)
    return record


def evaluate(cfg: DictConfig) -> dict:
    """Re-test a finished run from its saved config and checkpoint; writes ``eval.json`` beside it.

    With ``robustness=<name>`` (``conf/robustness/``) it then tests the same checkpoint on the corrupted test split
    for every corruption and level listed there and writes ``robustness.json`` (clean metric, metric per level,
    the paper's robustness score per corruption, the run's config) and its figures (accuracy-vs-level curves,
    radar of scores). Every test pass is seeded with ``seed`` (the run's seed when null).
    """
    check_eval_config(cfg)
    run_dir, run_cfg, ckpt, config = _finished_run(cfg)
    plan = _robustness_plan(cfg, run_cfg)
    _verify_for_evaluation(ckpt, config, cfg.checkpoint)
    seed = run_cfg.seed if cfg.get("seed") is None else int(cfg.seed)
    L.seed_everything(run_cfg.seed, workers=True, verbose=False)
    task = build_task(run_cfg)
    module, data, metric = task
    # a study is many passes: one tqdm bar over them instead of Lightning's bar per pass
    quiet_lightning()
    trainer = L.Trainer(logger=False, enable_checkpointing=False, default_root_dir=run_dir,
                        accelerator=cfg.accelerator, devices=1, limit_test_batches=cfg.get("limit_test_batches"),
                        enable_progress_bar=not plan, callbacks=[] if plan else [PercentProgressBar()],
                        enable_model_summary=False, plugins=[RunCheckpointIO(config)])
    with firing_rates(module.model) as rates:
        test = _test_pass(trainer, module, seed, datamodule=data, ckpt_path=str(ckpt))
    result = {"run_dir": str(run_dir), "checkpoint": str(ckpt), "metric_unit": METRIC_UNIT,
              f"test_{metric}": test[f"test/{metric}"],
              "test_metrics": test, "firing_rates": rates,
              "device": device_description(trainer.strategy.root_device)}
    write_json_atomic(run_dir / "eval.json", result)
    log.info("test %s %s (%s)", metric, percent(result[f"test_{metric}"]), ckpt)
    if plan:
        result["robustness"] = _robustness(cfg, run_dir, run_cfg, task, trainer, plan, test[f"test/{metric}"], seed)
    return result


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
        print(message, file=sys.stderr)
        if multirun:
            # an Exception, unlike SystemExit, is caught by Hydra's run_job and kept as the job's result
            raise CompactHydraException(message) from error
        raise SystemExit(2) from None
    except Exception as error:
        if not multirun:
            raise
        files = [h for h in logging.getLogger().handlers
                 if isinstance(h, logging.FileHandler) and h.baseFilename != os.devnull]  # pytest adds /dev/null
        for handler in files:  # the job's log file, not the console
            handler.handle(log.makeRecord(log.name, logging.ERROR, __file__, 0, "job failed", None, sys.exc_info()))
        where = f"traceback in {files[0].baseFilename}" if files else "no log file for its traceback"
        message = f"fsnn: error: {type(error).__name__}: {error} ({where})"
        print(message, file=sys.stderr)
        raise CompactHydraException(message) from error
