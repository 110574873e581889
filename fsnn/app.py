"""What ``train.py`` and ``evaluate.py`` do with a composed Hydra config.

A run lives in ``results/<task_name>/<run>/`` (Hydra's output dir): ``checkpoints/`` (``last.ckpt``
every epoch, ``best.ckpt`` on validation accuracy), Lightning logs, and ``metrics.json`` written
atomically. Rerunning the same command finds ``last.ckpt`` and resumes. Model selection uses the
validation split only; the test split is evaluated at the best-validation checkpoint (and, for
reference, with the last weights).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from fsnn.data import DatasetMissingError, build_dataset, dataset_info
from fsnn.models import backbone_supports, build_backbone
from fsnn.neurons import collect_alphas
from fsnn.results import device_description, package_versions, write_json_atomic
from fsnn.training import NonFiniteLossError, SpikingClassifier, SplitDataModule, firing_rates

log = logging.getLogger("fsnn")


class ConfigError(ValueError):
    """A combination of options that cannot work, reported before any data is loaded."""


# errors that are the user's to fix: one message, non-zero exit, no traceback
USER_ERRORS = (DatasetMissingError, ConfigError, NonFiniteLossError)


def run_dir_name(run_name: str | None, overrides: str) -> str:
    """Folder name of a run: ``run_name`` if given, else its command-line overrides, else ``default``."""
    name = run_name or overrides or "default"
    return name.replace("/", "_")


def _options(node: DictConfig, drop: tuple[str, ...] = ("name",)) -> dict:
    return {k: v for k, v in OmegaConf.to_container(node, resolve=True).items() if k not in drop}


def build_task(cfg: DictConfig):
    """``(SpikingClassifier, SplitDataModule)`` for ``cfg``; checks the pairing before loading data."""
    info = dataset_info(cfg.dataset.name)
    supported = backbone_supports(cfg.backbone.name)
    if info.kind not in supported:
        raise ConfigError(
            f"backbone {cfg.backbone.name!r} takes {sorted(supported)} data, but dataset "
            f"{cfg.dataset.name!r} is {info.kind!r} data; choose another backbone or dataset"
        )
    size = cfg.dataset.size
    model = build_backbone(
        cfg.backbone.name, num_classes=info.num_classes, in_channels=info.in_channels,
        input_size=(size, size), neuron=cfg.neuron.name, neuron_kwargs=_options(cfg.neuron),
        **_options(cfg.backbone),
    )
    scheduler = hydra.utils.instantiate(cfg.scheduler) if cfg.get("scheduler") else None
    module = SpikingClassifier(model, info.num_classes, hydra.utils.instantiate(cfg.optimizer), scheduler)
    data_dir = Path(cfg.paths.data_dir)

    def build():
        return build_dataset(cfg.dataset.name, data_dir=data_dir, T=cfg.dataset.T, size=size,
                             seed=cfg.seed, val_fraction=cfg.dataset.val_fraction)

    data = SplitDataModule(build, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed)
    return module, data


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
        "versions": package_versions(),
    }
    start = time.perf_counter()
    try:
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        module, data = build_task(cfg)
        checkpoints = run_dir / "checkpoints"
        last = checkpoints / "last.ckpt"
        best_cb = ModelCheckpoint(dirpath=checkpoints, filename="best", monitor="val/acc", mode="max",
                                  save_last=True, save_top_k=1, enable_version_counter=False)
        trainer = _trainer(cfg, run_dir, [best_cb])
        record["device"] = device_description(trainer.strategy.root_device)
        record["resumed_from"] = str(last) if last.exists() else None
        write_json_atomic(metrics_path, record)
        trainer.fit(module, datamodule=data, ckpt_path=last if last.exists() else None)

        last_val = trainer.validate(module, datamodule=data, verbose=False)[0]["val/acc"]
        last_test = trainer.test(module, datamodule=data, verbose=False)[0]["test/acc"]
        best_path = best_cb.best_model_path or str(last)
        with firing_rates(module.model) as rates:
            best_test = trainer.test(module, datamodule=data, ckpt_path=best_path, verbose=False)[0]["test/acc"]
        best_val = float(best_cb.best_model_score) if best_cb.best_model_score is not None else last_val
        record.update({
            "status": "complete",
            "epochs": trainer.current_epoch,
            "val_acc_best": best_val,
            "val_acc_last": last_val,
            "test_acc": best_test,  # at the best-validation checkpoint
            "test_acc_last": last_test,
            "best_checkpoint": best_path,
            "firing_rates": rates,
            "alphas": collect_alphas(module.model),
            "num_parameters": sum(p.numel() for p in module.model.parameters()),
        })
        log.info("best val acc %.4f | test acc at best val %.4f | last test acc %.4f",
                 best_val, best_test, last_test)
        return best_val
    except BaseException as error:
        record.update({"status": "failed", "error": f"{type(error).__name__}: {error}"})
        raise
    finally:
        record["wall_time_s"] = time.perf_counter() - start
        write_json_atomic(metrics_path, record)
        log.info("metrics: %s", metrics_path)


def evaluate(cfg: DictConfig) -> dict:
    """Re-test a finished run from its saved config and checkpoint; writes ``eval.json`` beside it."""
    run_dir = Path(cfg.run_dir)
    saved = run_dir / ".hydra" / "config.yaml"
    if not saved.exists():
        raise ConfigError(f"run_dir={run_dir} has no .hydra/config.yaml; pass the folder of a train.py run")
    run_cfg = OmegaConf.load(saved)
    run_cfg.paths.data_dir = cfg.paths.data_dir
    ckpt = run_dir / "checkpoints" / f"{cfg.checkpoint}.ckpt"
    if not ckpt.exists():
        raise ConfigError(f"checkpoint={cfg.checkpoint!r}: {ckpt} does not exist (expected best or last)")
    L.seed_everything(run_cfg.seed, workers=True, verbose=False)
    module, data = build_task(run_cfg)
    trainer = L.Trainer(logger=False, enable_checkpointing=False, default_root_dir=run_dir,
                        accelerator=cfg.accelerator, devices=1)
    with firing_rates(module.model) as rates:
        test = trainer.test(module, datamodule=data, ckpt_path=str(ckpt), verbose=False)[0]
    result = {"run_dir": str(run_dir), "checkpoint": str(ckpt), "test_acc": test["test/acc"],
              "test_loss": test["test/loss"], "firing_rates": rates,
              "device": device_description(trainer.strategy.root_device)}
    write_json_atomic(run_dir / "eval.json", result)
    log.info("test acc %.4f (%s)", result["test_acc"], ckpt)
    return result


def run_guarded(fn, cfg: DictConfig):
    """Run ``fn(cfg)``; a user error becomes one logged message and exit status 2."""
    try:
        return fn(cfg)
    except USER_ERRORS as error:
        log.error("%s", error)
        raise SystemExit(2) from None
