"""The earlier names of the options and recipe switches that do as the authors' released code does, read as their
names: the one place that knows them.

An option that does as the authors' code does is named ``authors_*`` (``backbone.authors_frozen_encoding``,
``dataset.authors_link_split``); a recipe switch that turns such options on names the codebase it reproduces
(``fspikede_*``: fspikeDE's graph code; ``msg_*``: MSG's code), see ``docs/concepts/recipes.md``. Their earlier
``legacy`` names stay accepted:

- a recorded config (a run's ``metrics.json``, a checkpoint's record) is read through :func:`current_config`, so
  that a run recorded under an earlier name fills the same table cell, and is found finished by its command, as one
  recorded under the current name;
- a command line's ``backbone.legacy_*=...`` is read as the current key (:func:`current_overrides`, with a note);
- an earlier switch, ``+recipe_switch=flif/legacy``, is a file of ``conf/recipe_switch/common/`` that composes the
  current one, so that the recorded commands keep their folders' names; and a command that names the current switch
  finds the folder of a run recorded under the earlier one (:func:`earlier_overrides`), so it does no work again.
"""

from __future__ import annotations

import sys

#: ``{earlier dotted config key: its name}``
RENAMED_KEYS = {
    "backbone.legacy_frozen_encoding": "backbone.authors_frozen_encoding",
    "backbone.legacy_double_softmax": "backbone.authors_double_softmax",
    "backbone.legacy_cumulated_readout": "backbone.authors_cumulated_readout",
    "backbone.legacy_no_spike_gradient": "backbone.authors_no_spike_gradient",
    "dataset.legacy_link_split": "dataset.authors_link_split",
    "dataset.legacy_link_negatives": "dataset.authors_link_negatives",
}
#: ``{earlier recipe switch: its name}`` (the value of a config's ``recipe_switch``)
RENAMED_SWITCHES = {
    "legacy": "fspikede",
    "legacy_features": "fspikede_features",
    "legacy_frozen_encoding": "fspikede_frozen_encoding",
    "legacy_double_softmax": "fspikede_double_softmax",
    "legacy_readout": "fspikede_readout",
    "authors_legacy": "authors_fspikede",
}


def current_config(config: dict) -> dict:
    """A copy of a recorded config tree (plain data) with every earlier key and recipe switch named as it is now;
    the tree itself is left as it is."""
    config = {key: dict(value) if isinstance(value, dict) else value for key, value in config.items()}
    for earlier, name in RENAMED_KEYS.items():
        group, _, key = earlier.partition(".")
        node = config.get(group)
        if isinstance(node, dict) and key in node:
            node[name.partition(".")[2]] = node.pop(key)
    switch = config.get("recipe_switch")
    if isinstance(switch, str) and switch in RENAMED_SWITCHES:
        config["recipe_switch"] = RENAMED_SWITCHES[switch]
    return config


def current_overrides(lines: list[str]) -> list[str]:
    """Command-line overrides with every earlier key named as it is now (``+backbone.legacy_double_softmax=true`` ->
    ``+backbone.authors_double_softmax=true``), each renamed one noted on stderr."""
    renamed = []
    for line in lines:
        key, equal, value = line.partition("=")
        prefix = key[: len(key) - len(key.lstrip("+~"))]
        name = RENAMED_KEYS.get(key[len(prefix) :])
        if name is None:
            renamed.append(line)
            continue
        print(f"fsnn: note: {key[len(prefix) :]} is read as {name}, its name", file=sys.stderr)
        renamed.append(f"{prefix}{name}{equal}{value}")
    return renamed


def earlier_overrides(lines) -> list[str] | None:
    """The overrides ``lines`` with every renamed recipe switch under its earlier name
    (``+recipe_switch=flif/fspikede`` -> ``+recipe_switch=flif/legacy``), the command a run recorded under that name
    has; ``None`` where no switch of ``lines`` was renamed."""
    earlier = {name: old for old, name in RENAMED_SWITCHES.items()}
    out, renamed = [], False
    for line in lines:
        key, equal, value = str(line).partition("=")
        neuron, slash, switch = value.rpartition("/")
        if key.lstrip("+~") == "recipe_switch" and switch in earlier:
            line, renamed = f"{key}{equal}{neuron}{slash}{earlier[switch]}", True
        out.append(line)
    return out if renamed else None
