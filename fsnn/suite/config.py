"""Every config value checked before any work. The run's own keys (paths, seeds, the only classes a config may
instantiate, :data:`TARGETS`) have their schemas here, and this machine's side of the paths (a writable
``paths.results_dir``) is checked beside the file helpers (:func:`fsnn.suite.config.check_folders`); the training loop's
groups (trainer, optimizer, scheduler, logger: their values, the arguments their classes take, a GPU for
``trainer.accelerator=gpu``, a logger's library) are declared beside the modules that use them
(:mod:`fsnn.suite.training`); a component's group (``dataset``, ``neuron``,
``backbone``, ``study``) is checked by the schema its registry reads from the component's own signature
(:meth:`fsnn.registry.Registry.schema`), so an option is declared once, by the component, and a check added to its
option type (:mod:`fsnn.checks`) holds for every config.

A schema is a pydantic model in strict mode: a value reaches the code exactly as the user wrote it, or the run stops
with one line ``fsnn: error: <group>.<key>: expected <what>, got <value>`` (:class:`ConfigError`); a key nothing
takes is refused by name with the closest valid ones.
"""

from __future__ import annotations

import functools
import math
import tempfile
from collections.abc import Collection
from pathlib import Path

import yaml
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from pydantic import BaseModel, ValidationError

from fsnn.checks import (
    Check,
    ConfigError,
    OptionError,
    foreign_option,
    option_check,
)
from fsnn.data.registry import DATASETS
from fsnn.models.registry import BACKBONES
from fsnn.neurons.registry import NEURONS
from fsnn.registry import UnknownNameError, did_you_mean
from fsnn.runs.configs import config_root, register_resolvers
from fsnn.runs.records import is_folder_name
from fsnn.suite.schemas import (
    BuiltSchema,
    EarlyStoppingSchema,
    LauncherSchema,
    LoggerSchema,
    OptimizerSchema,
    PathsSchema,
    RunSchema,
    SchedulerSchema,
    Schema,
    TrainerSchema,
    check_arguments,
    check_hardware,
    check_logger_library,
)
from fsnn.suite.studies import STUDIES
from fsnn.suite.tasks import TASKS

register_resolvers()  # the configs it checks read the environment through ${fsnn.env:...}

#: the only classes a config may instantiate (``_target_``), per group: the optimizers, schedulers, loggers and early
#: stopping fsnn ships configs for. A run folder's ``.hydra/config.yaml`` is checked against it before anything is built.
TARGETS = {
    "optimizer": ("torch.optim.Adam", "torch.optim.AdamW", "torch.optim.SGD"),
    "scheduler": (
        "torch.optim.lr_scheduler.CosineAnnealingLR",
        "torch.optim.lr_scheduler.ReduceLROnPlateau",
        "torch.optim.lr_scheduler.StepLR",
        "torch.optim.lr_scheduler.MultiStepLR",
    ),
    "logger": (
        "lightning.pytorch.loggers.CSVLogger",
        "lightning.pytorch.loggers.WandbLogger",
        "lightning.pytorch.loggers.TensorBoardLogger",
    ),
    "early_stopping": ("fsnn.suite.callbacks.EarlyStopping",),
}
#: the groups of a component, checked by its registry's schema
COMPONENTS = {"dataset": DATASETS, "neuron": NEURONS, "backbone": BACKBONES, "study": STUDIES}
#: the schemas of the training loop's groups and of the paths
RUN_GROUPS = {
    "trainer": TrainerSchema,
    "early_stopping": EarlyStoppingSchema,
    "optimizer": OptimizerSchema,
    "scheduler": SchedulerSchema,
    "logger": LoggerSchema,
    "paths": PathsSchema,
}
#: the groups a run is built from: a run's config cannot be without them, nor a saved one
RUN_REQUIRED = ("dataset", "backbone", "neuron", "optimizer", "trainer", "paths")
#: the order groups are checked in: a value is named before the interpolations that copy it (``scheduler.T_max``
#: copies ``trainer.max_epochs``, ``optimizer.lr`` ``dataset.lr``)
ORDER = (
    "trainer",
    "early_stopping",
    "dataset",
    "neuron",
    "backbone",
    "optimizer",
    "scheduler",
    "logger",
    "paths",
    "study",
)


def _show(value) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return repr(value)


def _validate(schema: type[BaseModel], values: dict, prefix: str, owner: str = "") -> None:
    """One :class:`ConfigError` for the first value of ``values`` that ``schema`` refuses; ``owner`` names what a
    key it does not know should be an option of."""
    try:
        schema.model_validate(values)
    except ValidationError as error:
        first = error.errors()[0]
        refused = first.get("ctx", {}).get("error")
        if isinstance(refused, OptionError):  # a combination of options (a component's check_options)
            raise ConfigError(
                f"{prefix}{refused.option}: expected {refused.expected}, got {_show(refused.value)}"
            ) from None
        key = first["loc"][0]
        field = next((f for name, f in schema.model_fields.items() if key in (name, f.alias)), None)
        if first["type"] == "missing":  # deleted (~group.key): a key the run reads, which has no default
            raise ConfigError(
                f"{prefix}{key}: expected {field.description or _described(field) or 'a value'}, got no value "
                "(the key is missing; the run reads it)"
            ) from None
        if first["type"] == "extra_forbidden":
            raise ConfigError(
                f"{prefix}{key}: expected an option of {owner} ({', '.join(schema.model_fields)}), "
                f"got {key!r}{did_you_mean(key, schema.model_fields)}"
            ) from None
        # an option type's own message says more than a field's description, which says more than pydantic's
        expected = (
            str(first["ctx"]["error"])
            if first["type"] == "value_error"
            else field.description or _described(field) or first["msg"].lower()
        )
        got = values.get(key, first["input"]) if isinstance(values, dict) else values
        raise ConfigError(f"{prefix}{key}: expected {expected}, got {_show(got)}") from None


def _described(field) -> str | None:
    """What a field's option type expects (``"null or an integer >= 1"`` for ``Count | None``)."""
    check = next((m for m in field.metadata if isinstance(m, Check)), None)
    optional = False
    if check is None:
        check, optional = option_check(field.annotation)
    return None if check is None else f"null or {check.expected}" if optional else check.expected


def _check_component(group: str, values: dict) -> None:
    """``values["name"]`` is registered in the group's registry and the other keys pass its schema."""
    name = values.get("name")
    try:
        schema = COMPONENTS[group].schema(name)
    except UnknownNameError as error:
        raise ConfigError(
            f"{group}.name: expected one of {', '.join(error.choices)}, got {_show(name)}{error.suggestion}"
        ) from None
    except ImportError as error:
        raise ConfigError(f"{group}.name: {error}") from None
    for key, value in values.items():  # another library's name for an option (SpikingJelly's v_threshold)
        if (hint := foreign_option(COMPONENTS[group].get(name), key, value)) is not None:
            raise ConfigError(f"{group}.{key}: {hint}")
    _validate(schema, {k: v for k, v in values.items() if k != "name"}, f"{group}.", f"{group} {name!r}")


def _container(cfg: DictConfig, key: str):
    """``cfg[key]`` resolved to plain Python; an interpolation that fails is the user's error on that key. The
    logger stays unresolved: only its ``_target_`` is checked, and its folder is Hydra's, known once a job runs."""
    try:
        node = cfg.get(key)
        if not isinstance(node, (DictConfig, ListConfig)):
            return node
        return OmegaConf.to_container(node, resolve=key != "logger")
    except MissingMandatoryValue as error:
        raise ConfigError(
            f"{getattr(error, 'full_key', None) or key}: expected a value, got ??? (none given)"
        ) from None
    except OmegaConfBaseException as error:
        raise ConfigError(f"{getattr(error, 'full_key', None) or key}: {error.msg}") from None


def _values(cfg: DictConfig, skip: tuple[str, ...] = ()) -> dict:
    """The config's top-level keys as plain Python (Hydra's own node and ``skip`` left out)."""
    return {key: _container(cfg, key) for key in cfg if key not in ("hydra", *skip)}


@functools.cache
def run_keys() -> frozenset[str]:
    """The top-level keys a run's config may hold: :class:`RunSchema`'s, the config groups (``conf/<group>/``), and
    the keys set by ``conf/config.yaml`` and by every file of the global package (an experiment's
    ``alpha_per_dataset``, a recipe switch's options). A key outside it was added by hand (``+alpha=0.3`` for
    ``neuron.alpha=0.3``) and would be ignored, yet name the run's folder."""
    root = config_root()
    keys = set(RunSchema.model_fields) | {p.name for p in root.iterdir() if p.is_dir()}
    for path in root.rglob("*.yaml"):
        text = path.read_text()
        if path == root / "config.yaml" or "@package _global_" in text:
            keys |= set(yaml.safe_load(text) or {}) - {"defaults", "hydra"}
    return frozenset(keys)


@functools.cache
def app_keys(config_name: str) -> frozenset[str]:
    """The top-level keys of the app config ``conf/<config_name>.yaml`` (``eval`` for ``evaluate.py``): its own keys
    and the groups of its defaults list."""
    config = yaml.safe_load((config_root() / f"{config_name}.yaml").read_text()) or {}
    groups = {next(iter(entry)) for entry in config.get("defaults", []) if isinstance(entry, dict)}
    return frozenset(set(config) - {"defaults", "hydra"} | groups)


def check_top_level_keys(values: dict, allowed: Collection[str] | None = None) -> None:
    """Refuse a top-level key of an app's config that is not ``allowed`` (default: :func:`run_keys`, a run's), naming
    the group option it may have meant (``alpha`` -> ``neuron.alpha``)."""
    listed = ", ".join(RunSchema.model_fields if allowed is None else sorted(allowed))
    allowed = run_keys() if allowed is None else allowed
    for key in values:
        if key in allowed:
            continue
        meant = [f"{group}.{key}" for group, options in values.items() if isinstance(options, dict) and key in options]
        hint = f"; did you mean {' or '.join(meant)}?" if meant else did_you_mean(key, sorted(allowed))
        raise ConfigError(f"{key}: expected a key of the config (a config group or one of {listed}), got {key!r}{hint}")


def _added_to_nothing(group: str, options: dict) -> bool:
    """Whether ``options``, a built group's without ``_target_``, were added to a choice that builds nothing
    (``+early_stopping.patience=5`` under ``early_stopping=none``: nothing would read them) rather than left by
    deleting the ``_target_`` of one that builds (``~optimizer._target_``, which holds the rest of its file)."""
    if "_target_" in options:
        return False
    files = (yaml.safe_load(path.read_text()) or {} for path in (config_root() / group).glob("*.yaml"))
    return not any(keys and keys <= set(options) for keys in (set(file) - {"_target_", "defaults"} for file in files))


def _validate_groups(values: dict, schema: type[Schema] = RunSchema, swept=()) -> None:
    check_targets(values)
    if schema is RunSchema:
        check_top_level_keys(values)
    _validate(schema, values, "")
    task = values.get("task")
    if task is not None and task not in TASKS:
        tasks = TASKS.names()
        raise ConfigError(
            f"task: expected null or one of {', '.join(tasks)}, got {_show(task)}{did_you_mean(task, tasks)}"
        )
    for group in ORDER:
        if not values.get(group) or group in swept:
            continue
        if group in COMPONENTS:
            _check_component(group, values[group])
        elif issubclass(RUN_GROUPS.get(group, Schema), BuiltSchema) and _added_to_nothing(group, values[group]):
            key = next(iter(values[group]))
            builders = sorted(p.stem for p in (config_root() / group).glob("*.yaml") if p.stem != "none")
            raise ConfigError(
                f"{group}.{key}: expected no option ({group} has no _target_: it builds nothing, and nothing reads "
                f"{key}; choose one that builds: {group}={' or '.join(builders)}), got {key!r}"
            )
        else:
            _validate(RUN_GROUPS.get(group, Schema), values[group], f"{group}.")
            check_arguments(group, values[group])


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
            expected = "one of " + ", ".join(allowed) if allowed and key == f"{group}._target_" else "no _target_ here"
            raise ConfigError(f"{key}: expected {expected}, got {_show(target)}")


def check_config(cfg: DictConfig, schema: type[Schema] = RunSchema, *, results: bool = True, swept=()) -> dict:
    """Check a composed app config (the ``hydra`` node aside): its top-level keys with ``schema`` (``train.py``'s by
    default), every group but those in ``swept`` (a multirun's base config: each job selects its own), the hardware
    its accelerator needs and its paths (``results``: that the results folder is writable); :class:`ConfigError` on
    the first bad value. Returns the values as plain Python. That a dataset, a backbone and a task fit together is
    the task registry's to say (:func:`fsnn.suite.tasks.task_kind`)."""
    values = _values(cfg, skip=("robustness",))  # the plan of the robustness study, which checks it
    if schema is RunSchema and (missing := [group for group in RUN_REQUIRED if not values.get(group)]):
        raise ConfigError(f"{missing[0]}: expected an option of conf/{missing[0]}/, got none (the group is missing)")
    _validate_groups(values, schema, swept)
    trainer = values.get("trainer")
    check_hardware(values if trainer is None else trainer, "" if trainer is None else "trainer.")
    _validate(PathsSchema, values.get("paths") or {}, "paths.")  # also where a sweep varies them
    check_folders(values["paths"], results)
    check_logger_library(values.get("logger"))
    check_logger_folders(values.get("logger"))
    return values


def check_launcher(cfg: DictConfig) -> None:
    """The settings of a multirun's launcher (``hydra.launcher.*`` of ``cfg``, the config with Hydra's node) that
    :class:`fsnn.suite.schemas.LauncherSchema` declares, checked before the launcher starts any job."""
    launcher = OmegaConf.select(cfg, "hydra.launcher") or {}
    values = {key: _container(launcher, key) for key in LauncherSchema.model_fields if key in launcher}
    _validate(LauncherSchema, values, "hydra.launcher.")


def check_logger_folders(logger: dict | None) -> None:
    """A logger's ``name`` and ``version``, folders it makes under its ``save_dir`` (the run folder), each name one
    folder there (``logger.name=../../x`` would write outside the run)."""
    for key in ("name", "version"):
        value = (logger or {}).get(key)
        if isinstance(value, str) and value and not is_folder_name(value):  # "" or null: no folder of its own
            raise ConfigError(
                f"logger.{key}: expected null or a folder name (not . or .., without / or control "
                f"characters, at most 255 bytes), got {value!r}"
            )


def check_run_config(run_cfg: DictConfig, source: Path) -> None:
    """Check the config a run folder holds (``source``) before anything is built from it: the same schemas as a
    command line, above all the allow-list of ``_target_``. Paths and hardware belong to this machine and are not
    checked. A config without the groups every run is composed of (:data:`RUN_REQUIRED`) is not a run's."""
    if missing := [key for key in RUN_REQUIRED if key not in run_cfg]:
        raise ConfigError(
            f"{source}: holds no config of a train.py run (missing {', '.join(missing)}; expected the mapping of the "
            "run's settings that train.py saved)"
        )
    try:
        _validate_groups(_values(run_cfg, skip=("paths",)))
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


def check_writable_folder(key: str, path: str) -> None:
    """``path`` is, or can be created as, a folder this process can write into (tried, not guessed: root passes
    every permission check)."""
    folder = Path(path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{key}: expected a folder, got {path!r} (a file)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ConfigError(f"{key}: expected a writable folder, got {path!r} ({error.strerror or error})") from None


def check_folders(paths: dict, results: bool) -> None:
    """This machine's side of ``paths.*``: ``data_dir`` is not a file; ``results_dir`` (when ``results``) is a
    writable folder, created if needed."""
    data_dir = Path(paths["data_dir"]).expanduser()
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"paths.data_dir: expected a folder, got {paths['data_dir']!r} (a file)")
    if results:
        check_writable_folder("paths.results_dir", paths["results_dir"])
