"""Stepping a fractional neuron from its state: the tensors cached per chunk shape follow the parameters, and one
step at a time gives the gradients of one chunk."""

import pytest
import torch

from fsnn.neurons import FractionalLIF

T, B, N = 24, 2, 3


def _steps(neuron, x, state):
    spikes, vs = [], []
    for x_t in x:
        s, v, state = neuron(x_t, state, return_state=True)
        spikes.append(s)
        vs.append(v)
    return torch.stack(spikes), torch.stack(vs), state


@pytest.mark.parametrize("engine", ["soe", "direct"])
def test_a_changed_alpha_reaches_the_next_step(engine):
    x = torch.randn(T, B, N, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) + 0.8
    neuron = FractionalLIF(alpha=0.5, engine=engine).double()
    _, _, state = _steps(neuron, x[:8], neuron.initial_state(x[0], horizon=T))  # caches alpha 0.5's tensors
    neuron.alpha = 0.7
    fresh = FractionalLIF(alpha=0.7, engine=engine).double()
    _, v, _ = _steps(neuron, x[8:], state)
    _, v_fresh, _ = _steps(fresh, x[8:], state)
    assert torch.equal(v, v_fresh)


def test_single_steps_give_the_gradients_of_one_chunk():
    x = (
        torch.randn(T, B, N, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) * 1.5 + 0.6
    ).requires_grad_()
    weight = torch.randn(T, B, N, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    neuron = FractionalLIF(engine="soe", learn_alpha=True, learn_tau=True, learn_threshold=True).double()
    inputs = [x, *neuron.parameters()]
    s, v, _ = neuron(x, neuron.initial_state(x[0], horizon=T), return_state=True)
    chunk = torch.autograd.grad(((s + v) * weight).sum(), inputs)
    s_steps, v_steps, _ = _steps(neuron, x, neuron.initial_state(x[0], horizon=T))
    steps = torch.autograd.grad(((s_steps + v_steps) * weight).sum(), inputs)
    assert torch.equal(s_steps, s)
    for a, b in zip(steps, chunk):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
