"""fsnn.runs.configs: every neuron's recipe switches compose, each as its one file says, with the neuron it names."""

from __future__ import annotations

import pytest
from helpers import CONF
from hydra import initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from fsnn.runs.configs import recipe_switch_options
from fsnn.runs.recipe_switches import RecipeSwitchSource
from fsnn.runs.renames import RENAMED_KEYS, RENAMED_SWITCHES, current_config, current_overrides

SWITCHES = recipe_switch_options(CONF)


def test_every_neuron_has_the_common_switches_and_its_own():
    common = {p.stem for p in (CONF / "recipe_switch" / "common").glob("*.yaml")}
    assert set(SWITCHES) == {p.stem for p in (CONF / "neuron").glob("*.yaml")}
    assert all(common <= set(switches) for switches in SWITCHES.values())
    assert {"alpha", "step"} <= set(SWITCHES["flif"]) - common and "decay_input" in SWITCHES["sj_lif"]
    assert "decay_input" not in SWITCHES["flif"] and "alpha" not in SWITCHES["sj_lif"]


@pytest.mark.parametrize("neuron", sorted(SWITCHES))
def test_a_switch_composes_for_its_neuron(compose_cfg, neuron):
    base = compose_cfg("dataset=cora", "backbone=sgcn", f"neuron={neuron}")
    for switch in SWITCHES[neuron]:
        cfg = compose_cfg("dataset=cora", "backbone=sgcn", f"+recipe_switch={neuron}/{switch}")
        # an earlier name composes its switch, which answers with its name
        assert (cfg.neuron.name, cfg.recipe_switch) == (neuron, RENAMED_SWITCHES.get(switch, switch))
        # the same switch with the neuron given apart is the same run
        if (CONF / "recipe_switch" / "common" / f"{switch}.yaml").is_file():
            apart = compose_cfg("dataset=cora", "backbone=sgcn", f"neuron={neuron}", f"+recipe_switch=common/{switch}")
            assert _without_hydra(apart) == _without_hydra(cfg), switch
    none = compose_cfg("dataset=cora", "backbone=sgcn", f"+recipe_switch={neuron}/none")
    assert none.neuron == base.neuron and none.dataset == base.dataset


def test_an_earlier_name_composes_and_answers_with_its_name(compose_cfg, capsys):
    """A recorded command's ``+recipe_switch=flif/legacy`` composes ``flif/fspikede``; a recorded config's
    ``backbone.legacy_*`` keys and a command line's read as the ``authors_*`` ones, so that both equal a new run's."""
    earlier = compose_cfg("dataset=cora", "backbone=sgcn", "+recipe_switch=flif/legacy")
    current = compose_cfg("dataset=cora", "backbone=sgcn", "+recipe_switch=flif/fspikede")
    assert earlier.recipe_switch == "fspikede" and _without_hydra(earlier) == _without_hydra(current)
    assert current.backbone.authors_frozen_encoding and current.backbone.authors_double_softmax
    recorded = _without_hydra(current)
    recorded["recipe_switch"] = "legacy"
    recorded["backbone"] = {key.replace("authors_", "legacy_"): value for key, value in recorded["backbone"].items()}
    assert "legacy_frozen_encoding" in recorded["backbone"]
    assert current_config(recorded) == _without_hydra(current) and recorded["recipe_switch"] == "legacy"
    lines = ["+backbone.legacy_cumulated_readout=true", "dataset.legacy_link_split=true", "seed=1"]
    assert current_overrides(lines) == [
        "+backbone.authors_cumulated_readout=true",
        "dataset.authors_link_split=true",
        "seed=1",
    ]
    assert "backbone.legacy_cumulated_readout is read as backbone.authors_cumulated_readout" in capsys.readouterr().err
    # every renamed key is an option of its group, and every earlier switch a file that composes the current one
    files = [*(CONF / "backbone").glob("*.yaml"), *(CONF / "recipe_switch" / "common").glob("*.yaml")]
    set_keys = {line.split(":")[0].strip() for path in files for line in path.read_text().splitlines()}
    assert {name.partition(".")[2] for name in RENAMED_KEYS.values()} <= set_keys
    for earlier, name in RENAMED_SWITCHES.items():
        assert f"/recipe_switch/common/{name}" in (CONF / "recipe_switch" / "common" / f"{earlier}.yaml").read_text()


def _without_hydra(cfg) -> dict:
    return {key: value for key, value in OmegaConf.to_container(cfg, resolve=False).items() if key != "hydra"}


def test_hydra_lists_every_switch_of_every_neuron():
    """What ``--help`` and the typo check list: the switch files and the generated switches, together."""
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        assert loader.get_group_options("recipe_switch", results_filter=None) == sorted({"common", *SWITCHES})
        for neuron, switches in SWITCHES.items():
            assert loader.get_group_options(f"recipe_switch/{neuron}") == switches, neuron


def _leaves(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def test_the_generated_switches_are_names_until_loaded():
    """Hydra deep-copies every config source before each look-up of a group's options (``--help`` makes over 200):
    the generated switches are not in the config store, whose source carries its config nodes into every copy, and
    their own source holds names only."""
    assert "recipe_switch" not in ConfigStore.instance().repo
    source = RecipeSwitchSource("fsnn", f"{RecipeSwitchSource.scheme()}://{CONF}")
    assert all(isinstance(leaf, str) for leaf in _leaves(vars(source)))
    assert sum(map(len, source.switches.values())) > 100  # every neuron's common switches, as names


def test_a_dataset_config_reads_the_papers_T_and_size_from_the_registry_and_takes_an_override(compose_cfg):
    from fsnn.data import dataset_info

    for name in ("nmnist", "imagenet", "cora"):
        info = dataset_info(name)
        dataset = compose_cfg(f"dataset={name}").dataset
        assert dataset.T == info.default_T and dataset.get("size") == (info.size[0] if info.size else None), name
    composed = compose_cfg("dataset=nmnist", "dataset.T=8", "dataset.size=28").dataset
    assert (composed.T, composed.size) == (8, 28)
