"""The schemas of a run's own config groups: strict pydantic models (:class:`Schema`) for the top-level keys, the
paths, and the training loop's groups (trainer, optimizer, scheduler, logger), with the checks of this machine's
hardware and of a logger's library. :mod:`fsnn.suite.config` validates a config against them."""

from __future__ import annotations

import importlib.util
from typing import Annotated, Literal

import lightning as L
import torch
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from fsnn.checks import (
    Check,
    ConfigError,
    Count,
    Flag,
    NonNegative,
    NonNegativeInt,
    Positive,
    integer,
    one_of,
)
from fsnn.registry import accepted, did_you_mean
from fsnn.runs.records import FolderName, FolderPath, RunName

MAX_SEED = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything keeps to


Seed = integer(f"an integer in [0, {MAX_SEED}]", lambda v: 0 <= v <= MAX_SEED)


class Schema(BaseModel):
    """A config group's schema: strict pydantic, so a value reaches the code exactly as written; keys it does not
    list pass through. A field without a default is a key the run reads: deleting it (``~group.key``) is refused."""

    # strict: "3" is not 3 and true is not 1; a missing key keeps its default, an explicit null is checked
    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False, populate_by_name=True)


class PathsSchema(Schema):
    """``paths.*``: where data is read and results are written."""

    data_dir: FolderPath
    results_dir: FolderPath


class RunSchema(Schema):
    """The top-level keys of ``conf/config.yaml`` (``task`` is checked against the task registry)."""

    seed: Seed
    task_name: FolderName
    run_name: RunName | None = None
    force: Flag = None
    tau_lr_scale: Positive = None


ACCELERATORS = ("auto", "cpu", "gpu", "cuda", "mps")


PRECISIONS = (
    "64-true",
    "32-true",
    "16-mixed",
    "bf16-mixed",
    "16-true",
    "bf16-true",
    "64",
    "32",
    "16",
    "bf16",
    64,
    32,
    16,
)


Batches = Annotated[
    int | float | None,
    Check(
        "null, an integer >= 0 (batches) or a number in [0, 1] (a share of the batches)",
        lambda v: v is None or (v >= 0 if isinstance(v, int) else 0 <= v <= 1),
    ),
]


class BuiltSchema(Schema):
    """A group that builds one of :data:`fsnn.suite.config.TARGETS`' classes (:func:`fsnn.suite.config.check_targets`
    says which), when it is not empty."""

    target: str = Field(alias="_target_", description="the class the group builds")


class OptimizerSchema(BuiltSchema):
    """``optimizer.*``: one of :data:`fsnn.suite.config.TARGETS`' optimizers, built later on the model's parameters."""

    partial: Literal[True] = Field(alias="_partial_", description="true (the model's parameters come later)")
    lr: Positive = None
    weight_decay: NonNegative = None
    momentum: NonNegative = None


class SchedulerSchema(BuiltSchema):
    """``scheduler.*``: one of :data:`fsnn.suite.config.TARGETS`' schedulers, or none."""

    # null or {} (conf/scheduler/none.yaml): a constant learning rate
    partial: Literal[True] = Field(alias="_partial_", description="true (the optimizer comes later)")
    T_max: Count = None
    eta_min: NonNegative = None


class EarlyStoppingSchema(BuiltSchema):
    """``early_stopping.*``: :class:`fsnn.suite.callbacks.EarlyStopping`, or none (``{}``: no early stopping)."""

    patience: Count = None
    min_delta: NonNegative = None
    metric: None = Field(
        None, description="no value (the run gives it: the validation metric its best checkpoint is selected on)"
    )


class LoggerSchema(BuiltSchema):
    """``logger.*``: one of :data:`fsnn.suite.config.TARGETS`' loggers, or none; its other keys are arguments of its
    class (:func:`check_arguments`)."""


class LauncherSchema(Schema):
    """``hydra.launcher.*``, the settings of a multirun's launcher (``conf/launcher/``) that fsnn's configs set: the
    launcher's own plugin takes them unchecked, and a job would fail only once submitted."""

    n_jobs: integer("an integer other than 0 (-1: one job per core)", lambda v: v != 0) | None = None  # joblib
    # submitit (slurm, submitit_local)
    timeout_min: Count | None = None
    max_num_timeout: NonNegativeInt | None = None
    nodes: Count | None = None
    tasks_per_node: Count | None = None
    gpus_per_node: NonNegativeInt | None = None
    cpus_per_task: Count | None = None
    mem_gb: Count | None = None


def _strategy(value: str) -> str:
    from lightning.pytorch.strategies import StrategyRegistry

    if value not in ("auto", *StrategyRegistry.available_strategies()):
        raise ValueError("auto, ddp, ddp_spawn, fsdp, deepspeed or another Lightning strategy")
    return value


class TrainerSchema(Schema):
    """Arguments of ``lightning.Trainer``: these are checked by value, any other by name
    (:func:`fsnn.suite.config.check_config`)."""

    max_epochs: Count = None
    min_epochs: NonNegativeInt | None = None
    max_steps: integer("-1 (no limit) or an integer >= 0", lambda v: v >= -1) = None
    accelerator: one_of(*ACCELERATORS) = None
    devices: Count | Literal["auto"] | list[NonNegativeInt] = Field(
        None, description="an integer >= 1, a list of device indices or auto"
    )
    num_nodes: Count = None
    strategy: Annotated[str, AfterValidator(_strategy)] = Field(None, description="a Lightning strategy")
    precision: Literal[PRECISIONS] = Field(None, description="one of " + ", ".join(PRECISIONS[:10]))
    gradient_clip_val: NonNegative | None = None
    deterministic: bool | Literal["warn"] | None = Field(None, description="true, false, warn or null")
    log_every_n_steps: Count = None
    check_val_every_n_epoch: Count | None = None
    accumulate_grad_batches: Count = None
    enable_progress_bar: Flag = None
    limit_train_batches: Batches = None
    limit_val_batches: Batches = None
    limit_test_batches: Batches = None


def check_hardware(values: dict, prefix: str) -> None:
    """A GPU accelerator needs that many GPUs here."""
    accelerator, devices = values.get("accelerator"), values.get("devices")
    if accelerator in ("gpu", "cuda"):
        count = torch.cuda.device_count()
        if count == 0:
            raise ConfigError(
                f"{prefix}accelerator: expected auto or cpu (no GPU is visible: "
                f"torch.cuda.is_available() is False), got {accelerator!r}"
            )
        wanted = len(devices) if isinstance(devices, list) else devices if isinstance(devices, int) else 1
        if wanted > count:
            raise ConfigError(f"{prefix}devices: expected at most {count} (the GPUs visible), got {devices!r}")
    if accelerator == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{prefix}accelerator: expected auto or cpu (no Apple GPU is available), got 'mps'")


def check_arguments(group: str, values: dict) -> None:
    """The keys of a run-level group are arguments of what it builds: ``lightning.Trainer`` (less those fsnn sets
    itself) or the group's ``_target_`` class; one it does not take is refused by name."""
    from hydra.utils import get_class

    owner = "lightning.Trainer" if group == "trainer" else values.get("_target_")
    allowed = accepted(L.Trainer if group == "trainer" else get_class(owner)) if owner else None
    allowed = allowed and allowed - {"default_root_dir", "logger", "callbacks", "plugins", "use_distributed_sampler"}
    for key in values:
        if allowed is not None and not key.startswith("_") and key not in allowed:
            raise ConfigError(
                f"{group}.{key}: expected an argument of {owner}, got {key!r}{did_you_mean(key, allowed)}"
            )


#: the optional libraries a logger needs (any one of them) and the extra that installs them
LOGGER_LIBRARIES = {
    "lightning.pytorch.loggers.WandbLogger": (("wandb",), "wandb"),
    "lightning.pytorch.loggers.TensorBoardLogger": (("tensorboard", "tensorboardX"), "tensorboard"),
}


def check_logger_library(logger: dict | None) -> None:
    """The logger's optional library is installed (checked without importing it)."""
    target = (logger or {}).get("_target_")
    modules, extra = LOGGER_LIBRARIES.get(target, ((), None))
    if modules and not any(importlib.util.find_spec(m) for m in modules):
        raise ConfigError(
            f"logger: {target.rsplit('.', 1)[-1]} needs the optional libraries of fsnn[{extra}] "
            f"({modules[0]} is not installed); install them with: pip install 'fsnn[{extra}]'"
        )
