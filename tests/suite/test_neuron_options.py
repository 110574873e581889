"""A neuron's config options: other libraries' argument names are refused, naming fsnn's."""

from __future__ import annotations

import re

import pytest

from fsnn import (
    FractionalLIF,
    build_neuron,
)


@pytest.mark.parametrize(
    "options, equivalent",
    [
        ({"v_threshold": 1.0}, "v_threshold is threshold"),
        ({"v_reset": None}, "reset='soft'"),
        ({"surrogate_function": object()}, "surrogate_function is surrogate"),
        ({"spike_grad": object()}, "spike_grad is surrogate"),
        ({"beta": 0.9}, "tau = 1 / (1 - beta)"),
    ],
)
def test_other_libraries_argument_names_name_fsnns(options, equivalent, compose_cfg):
    """SpikingJelly's and snnTorch's names for a neuron's options get one line naming fsnn's, from the class, the
    registry (lif: the alpha = 1 factory) and a config alike; an unknown name stays Python's TypeError."""
    from fsnn.checks import ConfigError
    from fsnn.suite.config import check_config

    ((name, value),) = options.items()
    with pytest.raises(ValueError, match=re.escape(equivalent)) as raised:
        FractionalLIF(**options)
    assert "\n" not in str(raised.value) and name in str(raised.value)
    with pytest.raises(ValueError, match=re.escape(equivalent)):
        build_neuron("lif", **options)
    if value is None or isinstance(value, float):  # a value a config can hold
        override = "neuron.v_reset=null" if name == "v_reset" else f"+neuron.{name}={value}"
        with pytest.raises(ConfigError, match=re.escape(f"neuron.{name}: ") + ".*" + re.escape(equivalent)):
            check_config(compose_cfg("neuron=flif", override))
    with pytest.raises(TypeError):
        FractionalLIF(not_an_option=1)
