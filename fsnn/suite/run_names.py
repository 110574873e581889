"""The name of a run's folder: the command's overrides as ``key-value`` joined by ``+``, less those that do not change
the run's result and with the keys every folder names, so one configuration has one folder whether it comes from a
single run or a sweep and whichever keys at their default value the command gives. The ``run_dir`` resolver of
``conf/hydra/default.yaml`` calls :func:`run_dir_name`."""

from __future__ import annotations

import functools
from pathlib import Path

from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from fsnn.runs.records import fitting_name
from fsnn.runs.renames import earlier_overrides
from fsnn.suite.checkpoint import FOLDER_EXCLUDED, non_result, result_config
from fsnn.suite.overrides import is_group

#: keys every run folder names, given on the command line or not: the seed tells a sweep's cells apart, so a name
#: without it would stand for the runs of every seed at once
ALWAYS_NAMED = ("seed",)


def _parse(overrides) -> list[Override]:
    return OverridesParser.create().parse_overrides(list(overrides or []))


def rendered_run_name(
    run_name: str | None, overrides, named: dict[str, str] | None = None, unchanged=frozenset()
) -> str:
    """The name a run's folder stands for: ``run_name`` if given, else its command-line overrides (``key=value``
    strings) less those of :data:`fsnn.suite.checkpoint.FOLDER_EXCLUDED` and the keys in ``unchanged``, with the
    ``named`` ``{key: value}`` of the keys it carries even when not given, as ``key-value`` joined by ``+`` in sorted
    order, else ``default``; a ``/`` becomes ``_``. Each override is rendered from its parsed value, as Hydra's
    sweepers render a job's overrides, and a key given twice keeps its last value (as Hydra applies it): ``x=true``
    typed and ``x=true`` swept both render ``x-True``, ``x=1e-3`` renders ``x-0.001``, so one configuration has one
    folder whether it comes from a single run or a sweep (:func:`folder_keys` gives ``named`` and ``unchanged``).
    Names are also valid Hydra values (``evaluate.py run_dir=...``)."""
    kept = {}
    for override in _parse(overrides):
        if not non_result(override.key_or_group, FOLDER_EXCLUDED) and override.key_or_group not in unchanged:
            value = Override._get_value_element_as_str(override.value())
            kept[override.key_or_group] = f"{override.get_key_element()}={value}"
    for key, value in (named or {}).items():
        kept.setdefault(key.lstrip("+~"), f"{key}={value}")
    return (run_name or "+".join(sorted(kept.values())).replace("=", "-") or "default").replace("/", "_")


def folder_keys(cfg: DictConfig, hydra_cfg: DictConfig) -> tuple[dict[str, str], frozenset[str]]:
    """``(named, unchanged)`` of :func:`rendered_run_name` for the run of ``cfg`` (its composed config) and
    ``hydra_cfg`` (Hydra's node of it): one configuration, one folder, whichever keys at their default value a
    command gives.

    ``named``: the keys a folder carries even where the command does not give them (:data:`ALWAYS_NAMED`, the seed),
    with their value in ``cfg``. ``unchanged``: the given keys whose override leaves the run's result config as it is
    without it (``neuron=flif`` where f-LIF is the default), found by composing the config without it
    (:func:`_unchanged_keys`); a key the config sweeps (``hydra.sweeper.params``) is never one of them, since every job
    of the sweep names it, at its default value too (``neuron-flif`` in Table 2's folders)."""
    if cfg.get("run_name"):  # a name given: nothing of the overrides is in it
        return {}, frozenset()
    task = list(hydra_cfg.overrides.task)
    given = {o.key_or_group for o in _parse(task) if not non_result(o.key_or_group, FOLDER_EXCLUDED)}
    named = {
        key: Override._get_value_element_as_str(cfg[key])
        for key in ALWAYS_NAMED
        if key not in given and cfg.get(key) is not None
    }
    swept = {key.lstrip("+~") for key in OmegaConf.select(hydra_cfg, "sweeper.params") or {}}
    candidates = tuple(sorted(given - swept - set(ALWAYS_NAMED)))
    if not candidates or not GlobalHydra.instance().is_initialized():
        return named, frozenset()
    return named, _unchanged_keys(
        hydra_cfg.job.config_name, tuple(hydra_cfg.overrides.hydra), tuple(task), candidates, _search_path()
    )


def _search_path() -> tuple:
    """Where the running Hydra finds its configs (part of what a composition depends on)."""
    path = GlobalHydra.instance().config_loader().get_search_path().get_path()
    return tuple((element.provider, element.path) for element in path)


@functools.lru_cache(maxsize=64)
def _unchanged_keys(
    config_name: str, hydra_overrides: tuple, task: tuple, candidates: tuple, search_path: tuple
) -> frozenset[str]:
    """The ``candidates`` (keys of ``task``'s overrides) whose overrides leave the result config
    (:func:`fsnn.suite.checkpoint.result_config`) as the command composes it: each left out alone, then all together
    (two keys can matter together and not alone: then none is left out). Composed by the running Hydra;
    ``search_path`` only keys the cache.

    A command of any length composes a bounded number of times: with every override, without the candidates' values
    (``key=value``, ``+key=value``, ``~key``), without each candidate that selects a group option (there are as
    many as config groups), and without all that turn out unchanged. A value left out alone is the whole config with
    that key's node as the config without the values holds it (a value override sets its node and nothing else)."""
    loader = GlobalHydra.instance().config_loader()
    parsed = _parse(task)

    def composed(without: set[str]) -> DictConfig | None:
        lines = [line for line, o in zip(task, parsed) if o.key_or_group not in without]
        try:
            return loader.load_configuration(
                config_name, [*hydra_overrides, *lines], RunMode.RUN, validate_sweep_overrides=False
            )
        except Exception:  # noqa: BLE001 - a config that does not compose without the key: the key matters
            return None

    def result(cfg: DictConfig | None) -> dict | None:
        try:
            return None if cfg is None else result_config(cfg)
        except Exception:  # noqa: BLE001 - a config that does not resolve without the key: the key matters
            return None

    whole_cfg = composed(set())
    whole = result(whole_cfg)
    if whole is None:
        return frozenset()
    # a value override sets its own node alone, unless its node holds or lies under another's
    values = {key for key in candidates if not is_group(loader, key)}
    values -= {key for key in values for other in values if key != other and _nested(key, other)}
    without = composed(values) if values else None
    if without is None:  # the config needs one of them: each is left out by composing
        values = set()
    same = {key for key in candidates if key not in values and result(composed({key})) == whole}
    if values:
        tree, other = (OmegaConf.to_container(cfg, resolve=False) for cfg in (whole_cfg, without))
        same |= {key for key in values if result(OmegaConf.create(_with_node_of(tree, other, key))) == whole}
    return frozenset(same) if len(same) <= 1 or result(composed(same)) == whole else frozenset()


def _nested(key: str, other: str) -> bool:
    """Whether the dotted keys ``key`` and ``other`` name nodes one of which holds the other."""
    return key.startswith(f"{other}.") or other.startswith(f"{key}.")


def _with_node_of(tree: dict, other: dict, key: str) -> dict:
    """A copy of ``tree`` whose node at the dotted ``key`` is ``other``'s (left out where ``other`` has none)."""
    *parents, last = key.split(".")
    copy = dict(tree)
    node, source = copy, other
    for part in parents:
        source = source.get(part) if isinstance(source, dict) else None
        child = node.get(part)
        if not isinstance(child, dict):
            if not isinstance(source, dict):
                return copy
            child = {}
        node[part] = dict(child)
        node = node[part]
    if isinstance(source, dict) and last in source:
        node[last] = source[last]
    else:
        node.pop(last, None)
    return copy


def run_dir_name(run_name: str | None, overrides, root: DictConfig | None = None) -> str:
    """Folder name of a run: :func:`rendered_run_name`, with :func:`folder_keys` of ``root`` (the composed config
    with its ``hydra`` node, as the ``run_dir`` resolver of ``conf/hydra/default.yaml`` sees it) when given, shortened
    to a readable start and a hash where it is longer than a file system takes (:func:`fsnn.runs.records.fitting_name`;
    ``metrics.json`` records the whole name). A run recorded under a recipe switch's earlier name
    (:func:`fsnn.runs.renames.earlier_overrides`) keeps its folder: where only that folder exists, it is the name."""
    keys = folder_keys(root, root.hydra) if root is not None and "hydra" in root else ()
    name = fitting_name(rendered_run_name(run_name, overrides, *keys))
    earlier = earlier_overrides(overrides) if run_name is None and root is not None else None
    if earlier is not None:
        # a run recorded under a switch's earlier name is this run: its folder is found, not trained again
        parent = Path(str(root.paths.results_dir)) / str(root.task_name)
        recorded = fitting_name(rendered_run_name(None, earlier, *keys))
        if not (parent / name).exists() and (parent / recorded / "metrics.json").is_file():
            return recorded
    return name
