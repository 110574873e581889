"""A command line checked against the config tree before Hydra composes it, so that a typo is answered like every other
bad value: one line ``fsnn: error: ...`` naming the option or key with the closest valid names, exit status 2, and no
folder made.

- an unknown option of a config group (``neuron=flf``, also one value of a sweep, ``neuron=flif,flf``):
  ``neuron: expected one of fif, flif, ..., got 'flf'; did you mean 'flif'?`` (helper configs that are no choice,
  such as ``neuron/shared/``, are not listed);
- a key the composed config does not have (``trainer.max_epoch=3``): ``trainer.max_epoch: expected a key of trainer
  (...), got 'max_epoch'; did you mean 'max_epochs'?``. A key added with ``+`` is checked after composition by the
  schema of its group (:mod:`fsnn.suite.config`), which refuses one its component does not take.

Anything else (a syntax error, Hydra's own flags) is left to Hydra.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra._internal.utils import get_args_parser
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import DictConfig, OmegaConf

from fsnn.checks import ConfigError
from fsnn.registry import did_you_mean

# Hydra's flags that do something other than run the app: left to Hydra
_HYDRA_MODES = (
    "help",
    "hydra_help",
    "version",
    "cfg",
    "info",
    "shell_completion",
    "experimental_rerun",
    "config_path",
    "config_name",
    "config_dir",
)


def swept_groups(cfg: DictConfig) -> set[str]:
    """The groups a multirun sweeps (its sweeper's ``params`` and the command line's sweeps): a job may select
    another option of them than the base config holds."""
    overrides = OverridesParser.create().parse_overrides(list(OmegaConf.select(cfg, "hydra.overrides.task") or []))
    keys = {
        *(OmegaConf.select(cfg, "hydra.sweeper.params") or {}),
        *(o.key_or_group for o in overrides if o.is_sweep_override()),
    }
    return {key.lstrip("+~").split(".")[0] for key in keys}


def is_group(loader, key: str) -> bool:
    """Whether ``key`` names a config group (or a folder of groups) that ``loader`` (Hydra's) knows."""
    return bool(loader.get_group_options(key) or loader.list_groups(key))


def _selects(loader, override, keys: tuple[str, ...]) -> bool:
    """Whether a swept override can change a key under ``keys`` (top-level names): it sets one, or it selects options
    of a group that are packaged there or globally (``# @package _global_``: experiments, setups)."""
    name = override.key_or_group.lstrip("+~")
    if name.split(".")[0] in keys:
        return True
    if not override.is_discrete_sweep() or not is_group(loader, name):
        return False
    for value in override.sweep_string_iterator():
        found = loader.repository.load_config(f"{name}/{value}")
        if found is not None and (found.header.get("package") or name).split(".")[0] in ("_global_", *keys):
            return True
    return False


def distinct_jobs(cfg: DictConfig, keys: tuple[str, ...]) -> list[list[str]] | None:
    """The override lists of a running multirun's jobs that may differ under ``keys`` (top-level names): its
    sweeper's ``params`` and the command line's overrides (which win), expanded as Hydra's basic sweeper does, each
    swept key that cannot change them (:func:`_selects`) kept at its first value. ``None`` when one that can is swept
    by what is no list of choices (Optuna's ``interval``), or outside a running Hydra (no config loader to ask)."""
    if not GlobalHydra.instance().is_initialized():
        return None
    loader = GlobalHydra.instance().config_loader()
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    lines = [*(f"{k}={v}" for k, v in params.items()), *(OmegaConf.select(cfg, "hydra.overrides.task") or [])]
    choices = {}
    for override in OverridesParser.create().parse_overrides(lines):
        key = override.get_key_element()
        if not override.is_sweep_override():
            choices[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif not override.is_discrete_sweep():
            if _selects(loader, override, keys):
                return None
            choices.pop(key, None)
        else:
            values = [f"{key}={value}" for value in override.sweep_string_iterator()]
            choices[key] = values if _selects(loader, override, keys) else values[:1]
    return [list(job) for job in itertools.product(*choices.values())]


def _overrides(argv: list[str]) -> list | None:
    """The parsed overrides of a command line that runs the app, else ``None``. :class:`ConfigError` for a value
    Hydra cannot parse that is a path or name the shell split (``run_dir=/my runs/x`` unquoted) or that holds
    characters of Hydra's grammar (``(``, ``[``, ``,``...): what Hydra says of it names no key and no quoting."""
    try:
        args = get_args_parser().parse_args(argv)
    except (SystemExit, Exception):  # noqa: BLE001 - Hydra reports what it cannot parse
        return None
    if any(getattr(args, flag, None) for flag in _HYDRA_MODES):
        return None
    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(args.overrides)
    except Exception:  # noqa: BLE001 - which override, and why, is found below
        pass
    for before, line in zip([None, *args.overrides], args.overrides):
        try:
            parser.parse_overrides([line])
        except Exception:  # noqa: BLE001
            key, equal, value = line.partition("=")
            if not equal and before and "=" in before:  # the shell split a value at a space
                key, value = before.partition("=")[::2]
                value = f"{value} {line}"
            elif not equal:
                return None
            raise ConfigError(
                f"{key.lstrip('+~')}: expected a value Hydra can parse, got {value!r}; quote it for "
                f"the shell and for Hydra: '{key}=\"{value}\"'"
            ) from None
    return None


def check_overrides(config_dir: Path, config_name: str, overrides: list) -> None:
    """:class:`ConfigError` for the first override that names an unknown group option or a key the composed config
    does not have (see the module docstring)."""
    groups, composed = set(), []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            loader = GlobalHydra.instance().config_loader()
            for override in overrides:
                group = override.key_or_group
                if group.startswith("hydra") or not is_group(loader, group):
                    if override.is_add() or override.is_force_add() or override.is_delete():
                        composed.append(override.input_line)
                    continue
                groups.add(group)
                values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.value()]
                for value in values:
                    if value is not None and value != "null":
                        _check_option(loader, group, str(value))
                composed.append(f"{override.get_key_element()}={values[0]}")
            try:
                cfg = compose(config_name, overrides=composed)
            except Exception:  # noqa: BLE001 - what does not compose is Hydra's to report
                return
    finally:
        GlobalHydra.instance().clear()
    tree = OmegaConf.to_container(cfg, resolve=False)
    for override in overrides:
        key = override.key_or_group
        if not (
            key in groups
            or key.startswith("hydra")
            or override.is_add()
            or override.is_force_add()
            or override.is_delete()
        ):
            _check_key(tree, key)


def _check_option(loader, group: str, value: str) -> None:
    """``value`` is an option of ``group``, or of one of its folders (``recipe_switch=flif/none``)."""
    folder, _, name = value.rpartition("/")
    where = f"{group}/{folder}" if folder else group
    options = [f"{folder}/{o}" if folder else o for o in loader.get_group_options(where)]
    if value not in options:
        options = options or loader.list_groups(group)
        raise ConfigError(f"{group}: expected one of {', '.join(options)}, got {value!r}{did_you_mean(value, options)}")


def _check_key(tree: dict, key: str) -> None:
    """``key`` (dotted) names a value of ``tree``; a list index or a value below a value is Hydra's to judge."""
    node, path = tree, []
    for part in key.split("."):
        if not isinstance(node, dict):
            return
        if part not in node:
            where = ".".join(path) or "the config"
            raise ConfigError(
                f"{key}: expected a key of {where} ({', '.join(map(str, node))}), got {part!r}"
                f"{did_you_mean(part, node)}"
            )
        node = node[part]
        path.append(part)


def check_command_line(config_dir: Path, config_name: str, argv: list[str] | None = None) -> bool:
    """Check the command line (``sys.argv[1:]``) of an app whose configs are ``config_dir/config_name.yaml``; on a
    typo print one ``fsnn: error:`` line and exit with status 2. Returns whether the command line runs the app:
    ``False`` for Hydra's own flags (``--help``, ``--cfg``, ...) and for what Hydra will refuse to parse."""
    try:
        overrides = _overrides(sys.argv[1:] if argv is None else argv)
        if overrides is None:
            return False
        if overrides:
            check_overrides(config_dir, config_name, overrides)
    except ConfigError as error:
        print(f"fsnn: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    return True
