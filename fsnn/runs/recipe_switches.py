"""The generated recipe switches as Hydra sees them (:func:`register_recipe_switches`): a config source of their own,
on the search path of every app that composes in a process that registered them.

Hydra deep-copies every config source before each look-up of a group's options (``--help`` makes over 200), and the
config store's source carries every stored node with it; this source holds the names only and makes a switch's node
when Hydra loads it, so that the copies cost next to nothing."""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.object_type import ObjectType
from hydra.core.plugins import Plugins
from hydra.plugins.config_source import ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from fsnn.runs.configs import COMMON_SWITCHES, config_root, recipe_switch_options

#: the config group of the switches
GROUP = "recipe_switch"


class RecipeSwitchSource(ConfigSource):
    """``recipe_switch/<neuron>/<switch>`` for every neuron and every common switch of
    :func:`fsnn.runs.configs.recipe_switch_options` that has no file of its own, under the config root that is this
    source's path: the common switch with ``neuron=<neuron>``, in the package ``_global_``."""

    def __init__(self, provider: str, path: str) -> None:
        super().__init__(provider=provider, path=path)
        root = Path(self.path)  # the path without the scheme
        generated = {
            neuron: tuple(switch for switch in switches if not (root / GROUP / neuron / f"{switch}.yaml").is_file())
            for neuron, switches in recipe_switch_options(root).items()
        }
        #: ``{neuron: (switch, ...)}``: names only, cheap to deep-copy
        self.switches = {neuron: switches for neuron, switches in generated.items() if switches}

    @staticmethod
    def scheme() -> str:
        return "fsnn-recipe-switch"

    def _children(self, group: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
        """``(groups, configs)`` directly under ``group``, or None where ``group`` is no group of this source."""
        group = group.strip("/")
        if group == "":
            return (GROUP,), ()
        if group == GROUP:
            return tuple(self.switches), ()
        parent, _, neuron = group.rpartition("/")
        if parent == GROUP and neuron in self.switches:
            return (), self.switches[neuron]
        return None

    def _split(self, config_path: str) -> tuple[str, str]:
        """``(group, name)`` of ``config_path``, with or without its ``.yaml``."""
        group, _, name = self._normalize_file_name(config_path.strip("/")).removesuffix(".yaml").rpartition("/")
        return group, name

    def is_group(self, config_path: str) -> bool:
        return self._children(config_path) is not None

    def is_config(self, config_path: str) -> bool:
        group, name = self._split(config_path)
        children = self._children(group) if group else None
        return children is not None and name in children[1]

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        groups, configs = self._children(config_path) or ((), ())
        wanted = [
            *(groups if results_filter in (None, ObjectType.GROUP) else ()),
            *(configs if results_filter in (None, ObjectType.CONFIG) else ()),
        ]
        return sorted(set(wanted))

    def load_config(self, config_path: str) -> ConfigResult:
        group, switch = self._split(config_path)
        neuron = group.rpartition("/")[2]
        node = OmegaConf.create({"defaults": [f"/{GROUP}/{COMMON_SWITCHES}/{switch}", {"override /neuron": neuron}]})
        return ConfigResult(config=node, path=self.full_path(), provider=self.provider, header={"package": "_global_"})

    def available(self) -> bool:
        return True


class RecipeSwitchSearchPath(SearchPathPlugin):
    """Puts :class:`RecipeSwitchSource`, on :func:`fsnn.runs.configs.config_root`, after the app's own configs."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append("fsnn-recipe-switch", f"{RecipeSwitchSource.scheme()}://{config_root()}")


def register_recipe_switches() -> None:
    """Make ``+recipe_switch=<neuron>/<switch>`` select the common switch with ``neuron=<neuron>``, for every neuron
    and every switch of :func:`fsnn.runs.configs.recipe_switch_options` that has no file of its own, by registering their config source
    (:class:`RecipeSwitchSource`) with Hydra (once per process: Hydra keeps it). One switch is then one file, and
    a sweep pairs it with a neuron in one value (``+recipe_switch: flif/none,sj_lif/reset``), as a multirun's product
    of two lists cannot."""
    for plugin in (RecipeSwitchSource, RecipeSwitchSearchPath):
        Plugins.instance().register(plugin)
