"""Every user-facing config value checked in one place, before any work: one schema per config group.

A schema is a pydantic model in strict mode: a value reaches the code exactly as the user wrote it, or the run stops
with one line ``fsnn: error: <group>.<key>: expected <what>, got <value>`` (:class:`ConfigError`). Each field says
what it expects in its ``description``; a key the schema does not list passes through (a backbone's own options, any
other Lightning ``Trainer`` argument). To check a new key, add a field to its group's schema; a new group gets a
schema in :data:`GROUPS`. Filesystem and hardware facts (a GPU for ``trainer.accelerator=gpu``, a writable
``paths.results_dir``) and the only classes a config may instantiate (:data:`TARGETS`) are checked here too.

:class:`CheckConfig` runs the checks as a Hydra callback, before Hydra creates a run folder; ``train`` and
``evaluate`` run them again on each job's config (the jobs of a multirun differ).
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from fsnn.data import DATASETS
from fsnn.history import METHODS
from fsnn.models import backbone_names
from fsnn.models.sgcn import THRESHOLD_MODES
from fsnn.neurons import CONVENTIONS, ENGINES, RESETS, neuron_names
from fsnn.surrogate import SURROGATES
from fsnn.tasks import KINDS, ConfigError, task_kind

#: the only classes a config may instantiate (``_target_``), per group: the optimizers, schedulers and loggers
#: fsnn ships configs for. A run folder's ``.hydra/config.yaml`` is checked against it before anything is built.
TARGETS = {
    "optimizer": ("torch.optim.Adam", "torch.optim.AdamW", "torch.optim.SGD"),
    "scheduler": ("torch.optim.lr_scheduler.CosineAnnealingLR", "torch.optim.lr_scheduler.ReduceLROnPlateau",
                  "torch.optim.lr_scheduler.StepLR", "torch.optim.lr_scheduler.MultiStepLR"),
    "logger": ("lightning.pytorch.loggers.CSVLogger", "lightning.pytorch.loggers.WandbLogger",
               "lightning.pytorch.loggers.TensorBoardLogger"),
}
#: keys that do not change a run's result (where files go, logging, progress bars, loader processes); they are left
#: out of the run folder's name (``conf/hydra/default.yaml``) and of the config a finished run is compared with
NON_RESULT_KEYS = ("run_name", "force", "paths", "logger", "trainer.enable_progress_bar", "dataset.num_workers")
ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps")
PRECISIONS = ("64-true", "32-true", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "64", "32", "16", "bf16",
              64, 32, 16)
MAX_SEED = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything keeps to


def _expect(expected: str, default: Any = None) -> Any:
    """A field that is optional in its group; ``expected`` is what the error line says it wants."""
    return Field(default, description=expected)


def _one_of(names) -> str:
    return "one of " + ", ".join(str(n) for n in names)


def _registered(names, expected: str | None = None):
    """A validator accepting the names ``names()`` lists (read when checked: plugins may register more); the error
    says ``expected``, by default the list."""

    def check(value: str) -> str:
        if value not in names():
            raise ValueError(expected or _one_of(names()))
        return value

    return AfterValidator(check)


# the kinds of value, each with what its error line says it expects
Number = Annotated[float, Field(description="a finite number")]
Positive = Annotated[float, Field(gt=0, description="a number > 0")]
NonNegative = Annotated[float, Field(ge=0, description="a number >= 0")]
Count = Annotated[int, Field(ge=1, description="an integer >= 1")]
NonNegativeInt = Annotated[int, Field(ge=0, description="an integer >= 0")]
Flag = Annotated[bool, Field(description="true or false")]
Batches = NonNegativeInt | Annotated[float, Field(ge=0, le=1)]
BATCHES = "null, an integer >= 0 (batches) or a number in [0, 1] (a share of the batches)"


class Schema(BaseModel):
    # strict: "3" is not 3 and true is not 1; a missing key keeps its default, an explicit null is checked
    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False, populate_by_name=True)


class NeuronSchema(Schema):
    name: Annotated[str, _registered(neuron_names)] = _expect("a registered neuron")
    alpha: Annotated[float, Field(gt=0, le=1)] = _expect("a number in (0, 1]")
    tau: Positive = None
    threshold: Positive = None
    dt: Positive = None
    memory: Count | None = _expect("null (full memory) or an integer >= 1")
    method: Literal[METHODS] = _expect(_one_of(METHODS))
    reset: Literal[RESETS] = _expect(_one_of(RESETS))
    surrogate: Literal[SURROGATES] = _expect(_one_of(SURROGATES))
    surrogate_scale: Positive | None = _expect("null (the surrogate's default) or a number > 0")
    engine: Literal[ENGINES] = _expect(_one_of(ENGINES))
    convention: Literal[CONVENTIONS] = _expect(_one_of(CONVENTIONS))
    v_reset: Number = None
    detach_reset: Flag = None
    learn_alpha: Flag = None
    learn_tau: Flag = None
    learn_threshold: Flag = None
    reset_delay: Flag = None


class DatasetSchema(Schema):
    name: Annotated[str, _registered(lambda: sorted(DATASETS))] = _expect("a registered dataset")
    T: Count = _expect("an integer >= 1 (time steps)")
    size: Count | Annotated[list[Count], Field(min_length=2, max_length=2)] = _expect(
        "an integer >= 1 or an [H, W] pair of them")
    batch_size: Count | None = _expect("null (one batch per split) or an integer >= 1")
    eval_batch_size: Count | None = _expect("null (the batch_size) or an integer >= 1")
    val_fraction: Annotated[float, Field(gt=0, lt=1)] = _expect("a number in (0, 1)")
    num_workers: NonNegativeInt = None
    split: Literal["ratio", "public"] = _expect("ratio or public")
    hops: NonNegativeInt = None
    zscore: Flag = None
    test_repeats: Count = None
    lr: Positive = None


class BackboneSchema(Schema):
    name: Annotated[str, _registered(backbone_names)] = _expect("a registered backbone")
    channels: Count = None
    num_blocks: Count = None
    hidden: Count = None
    embed_dim: Count = None
    num_heads: Count = None
    depth: Count = None
    mlp_ratio: Positive = None
    dim: Count = None
    n_layers: Count = None
    T: Count = None
    pe_dim: NonNegativeInt = None
    dropout: Annotated[float, Field(ge=0, lt=1)] = _expect("a number in [0, 1)")
    step_size: Positive = None
    threshold_mode: Literal[THRESHOLD_MODES] = _expect(_one_of(THRESHOLD_MODES))
    bias: Flag = None
    legacy_frozen_encoding: Flag = None
    legacy_double_softmax: Flag = None


class OptimizerSchema(Schema):
    target: Literal[TARGETS["optimizer"]] = Field(alias="_target_", description=_one_of(TARGETS["optimizer"]))
    partial: Literal[True] = Field(True, alias="_partial_", description="true (the model's parameters come later)")
    lr: Positive = None
    weight_decay: NonNegative = None
    momentum: NonNegative = None


class SchedulerSchema(Schema):
    # null or {} (conf/scheduler/none.yaml): a constant learning rate
    target: Literal[TARGETS["scheduler"]] = Field(alias="_target_", description=_one_of(TARGETS["scheduler"]))
    partial: Literal[True] = Field(True, alias="_partial_", description="true (the optimizer comes later)")
    T_max: Count = _expect("an integer >= 1 (epochs)")
    eta_min: NonNegative = None


class LoggerSchema(Schema):
    target: Literal[TARGETS["logger"]] = Field(alias="_target_", description=_one_of(TARGETS["logger"]))


class TrainerSchema(Schema):
    max_epochs: Count = None
    min_epochs: NonNegativeInt | None = _expect("null or an integer >= 0")
    max_steps: Annotated[int, Field(ge=-1)] = _expect("-1 (no limit) or an integer >= 0")
    accelerator: Literal[ACCELERATORS] = _expect(_one_of(ACCELERATORS))
    devices: Count | Literal["auto"] | list[NonNegativeInt] = _expect("an integer >= 1, a list of device indices "
                                                                      "or auto")
    num_nodes: Count = None
    strategy: Annotated[str, _registered(lambda: ["auto", *_strategies()], "auto, ddp, ddp_spawn, fsdp, deepspeed "
                                          "or another Lightning strategy")] = _expect("a Lightning strategy")
    precision: Literal[PRECISIONS] = _expect(_one_of(PRECISIONS[:10]))
    gradient_clip_val: NonNegative | None = _expect("null or a number >= 0")
    deterministic: bool | Literal["warn"] | None = _expect("true, false, warn or null")
    log_every_n_steps: Count = None
    check_val_every_n_epoch: Count | None = _expect("null or an integer >= 1")
    accumulate_grad_batches: Count = None
    enable_progress_bar: Flag = None
    limit_train_batches: Batches | None = _expect(BATCHES)
    limit_val_batches: Batches | None = _expect(BATCHES)
    limit_test_batches: Batches | None = _expect(BATCHES)


class PathsSchema(Schema):
    data_dir: str = _expect("a folder")
    results_dir: str = _expect("a folder")


class RunSchema(Schema):
    """The top-level keys of ``conf/config.yaml``."""

    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = _expect(f"an integer in [0, {MAX_SEED}]")
    task: Annotated[str, _registered(lambda: ["null (classification)", *_tasks()])] | None = _expect("a task")
    task_name: str = _expect("a name")
    run_name: str | None = _expect("null or a name")
    force: Flag = None


class EvalSchema(Schema):
    """The top-level keys of ``conf/eval.yaml``."""

    run_dir: str = _expect("the folder of a train.py run")
    checkpoint: Literal["best", "last"] = _expect("best or last")
    accelerator: Literal[ACCELERATORS] = _expect(_one_of(ACCELERATORS))
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] | None = _expect(f"null or an integer in [0, {MAX_SEED}]")
    limit_test_batches: Batches | None = _expect(BATCHES)


#: schema of each config group, by the group's key in the composed config
GROUPS: dict[str, type[Schema]] = {  # in this order: a value is named before the interpolations that copy it
    "trainer": TrainerSchema, "dataset": DatasetSchema, "neuron": NeuronSchema, "backbone": BackboneSchema,
    "optimizer": OptimizerSchema, "scheduler": SchedulerSchema, "logger": LoggerSchema, "paths": PathsSchema,
}


def _tasks() -> list[str]:
    return sorted(kind.TASK for kind in KINDS if kind.TASK)


def _strategies() -> list[str]:
    from lightning.pytorch.strategies import StrategyRegistry

    return StrategyRegistry.available_strategies()


def _show(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return repr(value)


def _validate(schema: type[Schema], values: dict, prefix: str) -> None:
    """One :class:`ConfigError` for the first value of ``values`` that ``schema`` refuses."""
    try:
        schema.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        key = first["loc"][0]
        field = next((f for name, f in schema.model_fields.items() if key in (name, f.alias)), None)
        # a validator's own message (a registry's names) says more than the field's description
        expected = (str(first["ctx"]["error"]) if first["type"] == "value_error"
                    else field.description if field is not None and field.description else first["msg"].lower())
        got = values.get(key, first["input"]) if isinstance(values, dict) else values
        raise ConfigError(f"{prefix}{key}: expected {expected}, got {_show(got)}") from None


def _container(cfg: DictConfig, key: str):
    """``cfg[key]`` resolved to plain Python; an interpolation that fails is the user's error on that key. The
    logger stays unresolved: only its ``_target_`` is checked, and its folder is Hydra's, known once a job runs."""
    try:
        node = cfg.get(key)
        if not isinstance(node, (DictConfig, ListConfig)):
            return node
        return OmegaConf.to_container(node, resolve=key != "logger")
    except MissingMandatoryValue as error:
        raise ConfigError(f"{getattr(error, 'full_key', None) or key}: expected a value, got ??? (none given)") from None
    except OmegaConfBaseException as error:
        raise ConfigError(f"{getattr(error, 'full_key', None) or key}: {error.msg}") from None


def _values(cfg: DictConfig, skip: tuple[str, ...] = ()) -> dict:
    """The config's top-level keys as plain Python (Hydra's own node and ``skip`` left out)."""
    return {key: _container(cfg, key) for key in cfg if key not in ("hydra", *skip)}


def _validate_groups(values: dict) -> None:
    _validate(RunSchema, values, "")
    for group, schema in GROUPS.items():
        if values.get(group):
            _validate(schema, values[group], f"{group}.")
    check_targets(values)


def _targets(node, path: str = "") -> list[tuple[str, str]]:
    """Every ``(key, _target_)`` in a config tree."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "_target_":
                found.append((here, value))
            else:
                found += _targets(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _targets(value, f"{path}[{i}]")
    return found


def check_targets(values: dict) -> None:
    """Refuse any ``_target_`` outside :data:`TARGETS` anywhere in ``values`` (a task config without ``hydra``), so
    that a config, typed or read from a shared run folder, can only build fsnn's own optimizers, schedulers and
    loggers."""
    for key, target in _targets(values):
        group = key.split(".")[0]
        allowed = TARGETS.get(group, ())
        if key != f"{group}._target_" or target not in allowed:
            expected = _one_of(allowed) if allowed and key == f"{group}._target_" else "no _target_ here"
            raise ConfigError(f"{key}: expected {expected}, got {_show(target)}")


def _writable_folder(key: str, path: str) -> None:
    """``path`` is, or can be created as, a folder this process can write into (tried, not guessed: root passes
    every permission check)."""
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{key}: expected a folder, got {_show(path)} (a file)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ConfigError(f"{key}: expected a writable folder, got {_show(path)} ({error.strerror or error})") from None


def _check_hardware(values: dict, prefix: str) -> None:
    """A GPU accelerator needs that many GPUs here."""
    accelerator, devices = values.get("accelerator"), values.get("devices")
    if accelerator in ("gpu", "cuda"):
        count = torch.cuda.device_count()
        if count == 0:
            raise ConfigError(f"{prefix}accelerator: expected auto or cpu (no GPU is visible: "
                              f"torch.cuda.is_available() is False), got {_show(accelerator)}")
        wanted = len(devices) if isinstance(devices, list) else devices if isinstance(devices, int) else 1
        if wanted > count:
            raise ConfigError(f"{prefix}devices: expected at most {count} (the GPUs visible), got {_show(devices)}")
    if accelerator == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{prefix}accelerator: expected auto or cpu (no Apple GPU is available), got 'mps'")


def _check_paths(paths: dict, results: bool) -> None:
    """``paths.data_dir`` is not a file; ``paths.results_dir`` is a writable folder (created if needed)."""
    _validate(PathsSchema, paths, "paths.")
    data_dir = Path(paths["data_dir"]).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"paths.data_dir: expected a folder, got {_show(paths['data_dir'])} (a file)")
    if results:
        _writable_folder("paths.results_dir", paths["results_dir"])


def check_config(cfg: DictConfig, groups_fit: bool = True) -> None:
    """Check a composed ``train.py`` config (the ``hydra`` node aside); :class:`ConfigError` on the first bad value.
    ``groups_fit``: also check that the dataset's kind of data, the backbone and the task fit together (not for a
    multirun's base config, whose dataset or backbone the sweep may replace in every job)."""
    values = _values(cfg)
    _validate_groups(values)
    _check_hardware(values.get("trainer") or {}, "trainer.")
    _check_paths(values.get("paths") or {}, results=True)
    if groups_fit:
        task_kind(cfg)


def check_eval_config(cfg: DictConfig) -> None:
    """Check a composed ``evaluate.py`` config; the run folder's own config is checked by :func:`check_run_config`."""
    values = _values(cfg, skip=("robustness",))
    _validate(EvalSchema, values, "")
    _check_hardware(values, "")
    _check_paths(values.get("paths") or {}, results=False)
    if not (Path(values["run_dir"]) / ".hydra" / "config.yaml").is_file():
        raise ConfigError(f"run_dir: expected the folder of a train.py run (with .hydra/config.yaml), "
                          f"got {_show(values['run_dir'])}")


def check_run_config(run_cfg: DictConfig, source: Path) -> None:
    """Check the config a run folder holds (``source``) before anything is built from it: the same schemas as a
    command line, above all the allow-list of ``_target_``. Paths and hardware belong to this machine and are not
    checked."""
    try:
        _validate_groups(_values(run_cfg, skip=("paths",)))
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


def strip_non_result(values: dict) -> dict:
    """A copy of a plain config tree without Hydra's node and :data:`NON_RESULT_KEYS`."""
    values = {k: (dict(v) if isinstance(v, dict) else v) for k, v in values.items() if k != "hydra"}
    for key in NON_RESULT_KEYS:
        *parents, leaf = key.split(".")
        node = values
        for parent in parents:
            node = node.get(parent) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(leaf, None)
    return values


def result_config(cfg: DictConfig) -> dict:
    """The resolved config of a run without :data:`NON_RESULT_KEYS` (and Hydra's own node): what its result depends
    on. A finished run is redone only when this changes (or with ``force=true``); a checkpoint is only read by a run
    of the same result config. Stripped before resolving: the logger's folder is only known inside a Hydra job."""
    stripped = strip_non_result(OmegaConf.to_container(cfg, resolve=False))
    return OmegaConf.to_container(OmegaConf.create(stripped), resolve=True)


def config_changes(old: dict, new: dict, prefix: str = "") -> list[str]:
    """``key: old -> new`` for every value that differs between two config trees."""
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        a, b = old.get(key, "<absent>"), new.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            changes += config_changes(a, b, f"{prefix}{key}.")
        elif a != b:
            changes.append(f"{prefix}{key}: {_show(a)} -> {_show(b)}")
    return changes


class CheckConfig(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/hydra/default.yaml`` and ``conf/eval.yaml``): checks the
    composed config before Hydra creates any folder, and stops with one line and exit status 2.

    A multirun's base config (the values all its jobs share) is checked before the first job; each job's own values
    are checked when it starts (:func:`fsnn.app.train`)."""

    def __init__(self, app: str = "train"):
        self.app = app

    def _check(self, config: DictConfig, groups_fit: bool = True) -> None:
        try:
            if self.app == "eval":
                check_eval_config(config)
            else:
                check_config(config, groups_fit)
        except ConfigError as error:
            print(f"fsnn: error: {error}", file=sys.stderr)
            raise SystemExit(2) from None

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config, groups_fit=False)
