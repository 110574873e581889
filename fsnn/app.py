"""What ``train.py`` and ``evaluate.py`` do with a composed Hydra config: the run folder, resume, ``metrics.json``,
the robustness study's loop and the user's errors. What is trained and tested comes from the task the config
composes (:func:`fsnn.tasks.build_task`, by the dataset's kind of data).

A run lives in ``results/<task_name>/<run>/`` (Hydra's output dir): ``checkpoints/`` (``last.ckpt``
every epoch, ``best.ckpt`` on validation accuracy), Lightning logs, and ``metrics.json`` written
atomically. Rerunning the same command finds ``last.ckpt`` and resumes. Model selection uses the
validation split only; the test split is evaluated at the best-validation checkpoint (and, for
reference, with the last weights).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from fsnn.data import DatasetMissingError
from fsnn.neurons import collect_alphas
from fsnn.results import device_description, package_versions, write_json_atomic
from fsnn.robustness import KINDS, check_corruption, robustness_score
from fsnn.tasks import ConfigError, Task, build_task, task_kind
from fsnn.training import NonFiniteLossError, SpeedMonitor, firing_rates

log = logging.getLogger("fsnn")

# errors that are the user's to fix: one message, non-zero exit, no traceback
USER_ERRORS = (DatasetMissingError, ConfigError, NonFiniteLossError)


def run_dir_name(run_name: str | None, overrides: str) -> str:
    """Folder name of a run: ``run_name`` if given, else its command-line overrides, else ``default``."""
    name = run_name or overrides or "default"
    return name.replace("/", "_")


def _trainer(cfg: DictConfig, run_dir: Path, callbacks: list) -> L.Trainer:
    logger = hydra.utils.instantiate(cfg.logger) if cfg.get("logger") else False
    options = {k: v for k, v in OmegaConf.to_container(cfg.trainer, resolve=True).items() if v is not None}
    return L.Trainer(default_root_dir=run_dir, logger=logger, callbacks=callbacks, **options)


def train(cfg: DictConfig) -> float:
    """Fit, select on validation, test; write ``metrics.json``. Returns the best validation accuracy."""
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    metrics_path = run_dir / "metrics.json"
    record = {
        "status": "running",
        "task": cfg.task_name,
        "run": run_dir.name,
        "overrides": list(HydraConfig.get().overrides.task),
        "choices": dict(HydraConfig.get().runtime.choices),
        "config": OmegaConf.to_container(cfg, resolve=True),
        "seed": cfg.seed,
        "recipe": cfg.recipe,
        "versions": package_versions(),
    }
    start = time.perf_counter()
    try:
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        module, data, metric = build_task(cfg)
        checkpoints = run_dir / "checkpoints"
        last = checkpoints / "last.ckpt"
        best_cb = ModelCheckpoint(dirpath=checkpoints, filename="best", monitor=f"val/{metric}", mode="max",
                                  save_last=True, save_top_k=1, enable_version_counter=False)
        speed = SpeedMonitor()
        trainer = _trainer(cfg, run_dir, [best_cb, speed])
        record["device"] = device_description(trainer.strategy.root_device)
        record["resumed_from"] = str(last) if last.exists() else None
        write_json_atomic(metrics_path, record)
        trainer.fit(module, datamodule=data, ckpt_path=last if last.exists() else None)

        last_val = trainer.validate(module, datamodule=data, verbose=False)[0][f"val/{metric}"]
        speed.reset_test()  # test throughput from this pass alone (no firing-rate hooks)
        last_test = trainer.test(module, datamodule=data, verbose=False)[0]
        speeds = speed.summary()
        best_path = best_cb.best_model_path or str(last)
        with firing_rates(module.model) as rates:
            best_test = trainer.test(module, datamodule=data, ckpt_path=best_path, verbose=False)[0]
        best_val = float(best_cb.best_model_score) if best_cb.best_model_score is not None else last_val
        record.update({
            "status": "complete",
            "metric": metric,
            "epochs": trainer.current_epoch,
            f"val_{metric}_best": best_val,
            f"val_{metric}_last": last_val,
            f"test_{metric}": best_test[f"test/{metric}"],  # at the best-validation checkpoint
            f"test_{metric}_last": last_test[f"test/{metric}"],
            "test_metrics": best_test,
            "best_checkpoint": best_path,
            "firing_rates": rates,
            "alphas": collect_alphas(module.model),
            "num_parameters": sum(p.numel() for p in module.model.parameters()),
            **speeds,
        })
        log.info("best val %s %.4f | test %s at best val %.4f | last test %.4f", metric, best_val, metric,
                 record[f"test_{metric}"], record[f"test_{metric}_last"])
        return best_val
    except BaseException as error:
        record.update({"status": "failed", "error": f"{type(error).__name__}: {error}"})
        raise
    finally:
        record["wall_time_s"] = time.perf_counter() - start
        write_json_atomic(metrics_path, record)
        log.info("metrics: %s", metrics_path)


def _finished_run(cfg: DictConfig) -> tuple[Path, DictConfig, Path]:
    """``(run_dir, the run's saved config with this machine's data_dir, checkpoint path)``; ConfigError if absent."""
    run_dir = Path(cfg.run_dir)
    saved = run_dir / ".hydra" / "config.yaml"
    if not saved.exists():
        raise ConfigError(f"run_dir={run_dir} has no .hydra/config.yaml; pass the folder of a train.py run")
    run_cfg = OmegaConf.load(saved)
    run_cfg.paths.data_dir = cfg.paths.data_dir
    ckpt = run_dir / "checkpoints" / f"{cfg.checkpoint}.ckpt"
    if not ckpt.exists():
        found = sorted(p.stem for p in (run_dir / "checkpoints").glob("*.ckpt"))
        raise ConfigError(f"checkpoint={cfg.checkpoint!r}: {ckpt} does not exist (run_dir={run_dir} has "
                          f"{'checkpoints ' + ', '.join(found) if found else 'no checkpoints'}; expected best or last)")
    return run_dir, run_cfg, ckpt


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
                log.info("%s %g: test %s %.4f (clean %.4f)", name, level, metric, values[-1], clean)
            corruptions[name] = {
                "levels": levels, metric: values, "by_level": {f"{level:g}": v for level, v in zip(levels, values)},
                "score": robustness_score(clean, values) if clean > 0 else None, "options": options,
            }
    record = {
        "robustness": cfg.robustness.get("name"), "run_dir": str(run_dir), "checkpoint": cfg.checkpoint,
        "metric": metric, "clean": clean, "seed": seed, "limit_test_batches": cfg.get("limit_test_batches"),
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
    run_dir, run_cfg, ckpt = _finished_run(cfg)
    plan = _robustness_plan(cfg, run_cfg)
    seed = run_cfg.seed if cfg.get("seed") is None else int(cfg.seed)
    L.seed_everything(run_cfg.seed, workers=True, verbose=False)
    task = build_task(run_cfg)
    module, data, metric = task
    # a study is many passes: one tqdm bar over them instead of Lightning's bar per pass
    trainer = L.Trainer(logger=False, enable_checkpointing=False, default_root_dir=run_dir,
                        accelerator=cfg.accelerator, devices=1, limit_test_batches=cfg.get("limit_test_batches"),
                        enable_progress_bar=not plan)
    with firing_rates(module.model) as rates:
        test = _test_pass(trainer, module, seed, datamodule=data, ckpt_path=str(ckpt))
    result = {"run_dir": str(run_dir), "checkpoint": str(ckpt), f"test_{metric}": test[f"test/{metric}"],
              "test_metrics": test, "firing_rates": rates,
              "device": device_description(trainer.strategy.root_device)}
    write_json_atomic(run_dir / "eval.json", result)
    log.info("test %s %.4f (%s)", metric, result[f"test_{metric}"], ckpt)
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
    ``max_failure_rate``. Other exceptions (bugs) keep their traceback and take the same paths.
    """
    try:
        return fn(cfg)
    except USER_ERRORS as error:
        print(f"fsnn: error: {error}", file=sys.stderr)
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            # an Exception, unlike SystemExit, is caught by Hydra's run_job and kept as the job's result
            raise CompactHydraException(f"fsnn: error: {error}") from error
        raise SystemExit(2) from None
