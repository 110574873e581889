"""What ``train.py`` and ``evaluate.py`` do with a composed Hydra config.

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
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import hydra
import lightning as L
from hydra.core.hydra_config import HydraConfig
from hydra.errors import CompactHydraException
from hydra.types import RunMode
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from fsnn.data import DatasetMissingError, build_dataset, dataset_info
from fsnn.graphs.data import GRAPH_DATASETS, graph_cache_dir, load_graph
from fsnn.graphs.features import node_features
from fsnn.graphs.models import GRAPH_MODELS, build_graph_model
from fsnn.graphs.training import GraphLinkPredictor, GraphNodeClassifier, LinkDataModule, NodeDataModule, spike_noise
from fsnn.models import backbone_supports, build_backbone
from fsnn.neurons import collect_alphas
from fsnn.results import device_description, package_versions, write_json_atomic
from fsnn.robustness import (
    GRAPH_CORRUPTIONS,
    KINDS,
    SPIKE_NOISE,
    CorruptedDataset,
    check_corruption,
    robustness_score,
    spike_noise_std,
)
from fsnn.training import NonFiniteLossError, SpeedMonitor, SpikingClassifier, SplitDataModule, firing_rates

log = logging.getLogger("fsnn")


class Task(NamedTuple):
    module: L.LightningModule
    data: L.LightningDataModule
    metric: str  # the validation/test metric that selects and reports: "acc" or "auc"


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


def _kinds(backbone: str) -> set[str]:
    return {"graph"} if backbone in GRAPH_MODELS else backbone_supports(backbone)


def data_kind(dataset: str) -> str:
    return "graph" if dataset in GRAPH_DATASETS else dataset_info(dataset).kind


def build_task(cfg: DictConfig) -> Task:
    """The Lightning module and data module for ``cfg``; checks the pairing before loading data."""
    kind, supported = data_kind(cfg.dataset.name), _kinds(cfg.backbone.name)
    if kind not in supported:
        raise ConfigError(
            f"backbone {cfg.backbone.name!r} takes {sorted(supported)} data, but dataset "
            f"{cfg.dataset.name!r} is {kind!r} data; choose another backbone or dataset"
        )
    if cfg.get("task") not in (None, "link"):
        raise ConfigError(f"task must be null (classification) or 'link', got {cfg.task!r}")
    if cfg.get("task") == "link" and cfg.backbone.name != "msg":
        raise ConfigError(f"task=link needs backbone=msg (it decodes edges), got backbone={cfg.backbone.name!r}")
    scheduler = hydra.utils.instantiate(cfg.scheduler) if cfg.get("scheduler") else None
    optimizer = hydra.utils.instantiate(cfg.optimizer)
    return (_graph_task if kind == "graph" else _vision_task)(cfg, optimizer, scheduler)


def _vision_task(cfg: DictConfig, optimizer, scheduler) -> Task:
    info = dataset_info(cfg.dataset.name)
    size = cfg.dataset.size
    model = build_backbone(
        cfg.backbone.name, num_classes=info.num_classes, in_channels=info.in_channels,
        input_size=(size, size), neuron=cfg.neuron.name, neuron_kwargs=_options(cfg.neuron),
        **_options(cfg.backbone),
    )
    module = SpikingClassifier(model, info.num_classes, optimizer, scheduler)

    def build():
        return build_dataset(cfg.dataset.name, data_dir=Path(cfg.paths.data_dir), T=cfg.dataset.T, size=size,
                             seed=cfg.seed, val_fraction=cfg.dataset.val_fraction)

    data = SplitDataModule(build, cfg.dataset.batch_size, cfg.dataset.num_workers, cfg.seed)
    return Task(module, data, "acc")


def _graph_task(cfg: DictConfig, optimizer, scheduler) -> Task:
    data_dir, name = Path(cfg.paths.data_dir), cfg.dataset.name
    graph = load_graph(name, data_dir=data_dir, split=cfg.dataset.split, seed=cfg.seed)
    options = _options(cfg.backbone)
    T = options.pop("T", cfg.dataset.T)
    build = dict(neuron=cfg.neuron.name, neuron_kwargs=_options(cfg.neuron), T=T)
    if cfg.get("task") == "link":
        model = build_graph_model("msg", graph.num_features, None, **build, **options)
        return Task(GraphLinkPredictor(model, optimizer, scheduler), LinkDataModule(graph, seed=cfg.seed), "auc")
    features = node_inputs(cfg, graph, cache_dir=graph_cache_dir(data_dir, name))
    in_features, whole = (graph.num_features, graph) if features is None else (features.shape[1], None)
    num_classes = int(graph.y.max()) + 1
    model = build_graph_model(cfg.backbone.name, in_features, num_classes, **build, **options)
    module = GraphNodeClassifier(model, num_classes, optimizer, scheduler, graph=whole,
                                 test_repeats=cfg.dataset.test_repeats, monitor="val/acc")
    data = NodeDataModule.from_masks(features, graph, batch_size=cfg.dataset.batch_size, seed=cfg.seed)
    return Task(module, data, "acc")


def node_inputs(cfg: DictConfig, graph, cache_dir: Path | None = None):
    """What a node classifier reads of ``graph``: the preprocessed feature rows of SGCN/DRSGNN (SGC propagation,
    z-scoring on the training nodes, the backbone's positional encoding), or ``None`` for a full-graph model (MSG),
    which reads ``graph.x`` and ``graph.edge_index`` itself."""
    if cfg.backbone.name == "msg":
        return None
    options = _options(cfg.backbone)
    return node_features(graph, hops=cfg.dataset.hops, pe=options.get("pe"), pe_dim=options.get("pe_dim", 32),
                         pe_seed=0, cache_dir=cache_dir)


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
    kind = "graph" if data_kind(run_cfg.dataset.name) == "graph" else "vision"
    if kind == "graph" and run_cfg.get("task") == "link":
        raise ConfigError(f"robustness={spec.get('name')!r}: run_dir={cfg.run_dir} is a link-prediction run; the "
                          "robustness study covers vision and node-classification runs")
    plan = {}
    for name, entry in corruptions.items():
        entry = entry or {}
        extra = sorted(set(entry) - {"levels", "options"})
        if extra:
            raise ConfigError(f"robustness.corruptions.{name}: unknown keys {extra}; expected levels and options")
        options = entry.get("options") or {}
        try:
            plan[name] = (check_corruption(kind, name, entry.get("levels"), options), options)
        except ValueError as error:
            hint = "" if name in KINDS[kind] else (
                f" (run_dir={cfg.run_dir} is a {kind} run on {run_cfg.dataset.name}; "
                f"robustness={'events' if kind == 'vision' else 'graph'} fits it)")
            raise ConfigError(f"robustness.corruptions.{name}: {error}{hint}") from None
    return plan


def _test_pass(trainer: L.Trainer, module: L.LightningModule, seed: int, **data) -> dict[str, float]:
    """One test pass, seeded, so that every pass of a study draws the same Poisson spikes and spike noise."""
    L.seed_everything(seed, workers=True, verbose=False)
    return trainer.test(module, verbose=False, **data)[0]


@contextmanager
def _replaced(obj, **values):
    """Set attributes of ``obj`` (e.g. a module's graph buffers) for the duration of the block."""
    old = {name: getattr(obj, name) for name in values}
    try:
        for name, value in values.items():
            setattr(obj, name, value)
        yield obj
    finally:
        for name, value in old.items():
            setattr(obj, name, value)


def _corrupted_tester(run_cfg: DictConfig, task: Task, trainer: L.Trainer, seed: int):
    """``test(name, level, options) -> metric`` on the test split with one corruption applied at test time.

    Vision: the test set's frames, sample by sample (:class:`fsnn.robustness.CorruptedDataset`). Graph: the graph
    is corrupted once per level (one draw seeded with ``seed``) and the model's input rebuilt from it; spike noise
    switches on the model's probe (``spike_noise_std``) instead.
    """
    module, data, metric = task
    if isinstance(data, NodeDataModule):
        graph = load_graph(run_cfg.dataset.name, data_dir=Path(run_cfg.paths.data_dir), split=run_cfg.dataset.split,
                           seed=run_cfg.seed)

        def test(name: str, level: float, options: dict) -> float:
            if name == SPIKE_NOISE:
                with spike_noise(module, spike_noise_std(level)):
                    return _test_pass(trainer, module, seed, datamodule=data)[f"test/{metric}"]
            corrupted = GRAPH_CORRUPTIONS[name](graph, level, seed, **options)
            if module.full_graph:
                with _replaced(module, graph_x=corrupted.x.float(), graph_edge_index=corrupted.edge_index.long()):
                    return _test_pass(trainer, module, seed, datamodule=data)[f"test/{metric}"]
            rows = NodeDataModule.from_masks(node_inputs(run_cfg, corrupted), corrupted, batch_size=data.batch_size,
                                             seed=run_cfg.seed)
            return _test_pass(trainer, module, seed, datamodule=rows)[f"test/{metric}"]

        return test
    data.setup()
    test_set = data.splits[2]

    def test(name: str, level: float, options: dict) -> float:
        corrupted = CorruptedDataset(test_set, name, level, seed, options)
        frames = SplitDataModule(lambda: (None, None, corrupted), data.batch_size, data.num_workers, data.seed)
        return _test_pass(trainer, module, seed, datamodule=frames)[f"test/{metric}"]

    return test


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
    test = _corrupted_tester(run_cfg, task, trainer, seed)
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
