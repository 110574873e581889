"""fsnn.configs: every neuron's recipe switches compose, each as its one file says, with the neuron it names."""

from __future__ import annotations

import pytest
from helpers import CONF

from fsnn.configs import recipe_switch_options

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
        assert (cfg.neuron.name, cfg.recipe_switch) == (neuron, switch)
        # the same switch with the neuron given apart is the same run
        if (CONF / "recipe_switch" / "common" / f"{switch}.yaml").is_file():
            apart = compose_cfg("dataset=cora", "backbone=sgcn", f"neuron={neuron}", f"+recipe_switch=common/{switch}")
            assert apart.neuron == cfg.neuron and apart.dataset == cfg.dataset and apart.recipe == cfg.recipe
    none = compose_cfg("dataset=cora", "backbone=sgcn", f"+recipe_switch={neuron}/none")
    assert none.neuron == base.neuron and none.dataset == base.dataset
