"""Learned parameters stay valid: a learned tau (or a fixed one under a learned alpha) never crosses the stability
bound of :func:`fsnn.neurons.memory.stable_tau`, a learned alpha stays in its range, and a NaN/inf parameter after an
optimiser step stops training in one line that names it."""

from __future__ import annotations

import math

import lightning as L
import pytest
import torch
from torch import nn

from fsnn import FractionalLIF
from fsnn.neurons.memory import stable_tau
from fsnn.neurons.modules import LEARNED_ALPHA, inverse_softplus
from fsnn.suite.lightning import (
    NonFiniteLossError,
    NonFiniteParameterError,
    SpikingClassifier,
    check_finite_parameters,
)


def drive(T=300, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(T, 4, 8, generator=g) * 2


def test_a_learned_tau_pushed_below_the_bound_is_held_above_it():
    m = FractionalLIF(alpha=0.5, tau=0.9, learn_tau=True)
    bound = stable_tau("pred", 0.5)
    with torch.no_grad():
        m.tau_raw.fill_(inverse_softplus(0.5))  # where an optimiser step with a large rate can take it
    assert bound < float(m.tau.detach()) <= bound * (1 + 2e-6)
    _, v = m(drive(), return_state=True)
    assert torch.isfinite(v).all()


def test_a_fixed_tau_stays_above_the_bound_of_a_learned_alpha():
    m = FractionalLIF(alpha=0.9, tau=0.9, learn_alpha=True)  # valid at alpha 0.9 (bound 0.575), not at 0.1 (1.003)
    with torch.no_grad():
        m.alpha_raw.fill_(math.log(0.1 / 0.9))
    assert float(m.tau.detach()) > stable_tau("pred", float(m.alpha.detach())) > 0.9
    _, v = m(drive(), return_state=True)
    assert torch.isfinite(v).all()


def test_above_the_bound_tau_and_its_gradient_are_exactly_the_softplus():
    m = FractionalLIF(alpha=0.5, tau=1.3, learn_tau=True)
    m.tau.backward()
    raw = m.tau_raw.detach().clone().requires_grad_()
    nn.functional.softplus(raw).backward()
    assert torch.equal(m.tau.detach(), nn.functional.softplus(raw).detach()) and torch.equal(m.tau_raw.grad, raw.grad)


@pytest.mark.parametrize("sign, moves", [(1.0, False), (-1.0, True)], ids=["outwards", "inwards"])
def test_at_the_bound_only_a_gradient_back_inside_passes(sign, moves):
    m = FractionalLIF(alpha=0.5, tau=0.9, learn_tau=True)
    with torch.no_grad():
        m.tau_raw.fill_(inverse_softplus(0.5))
    (sign * m.tau).backward()  # descent on +tau would lower tau further; on -tau it raises it
    assert (m.tau_raw.grad != 0) == moves


@pytest.mark.parametrize("raw", [-1000.0, 1000.0])
def test_a_learned_alpha_stays_in_its_range(raw):
    m = FractionalLIF(alpha=0.5, method="gl", learn_alpha=True)
    with torch.no_grad():
        m.alpha_raw.fill_(raw)  # float64's sigmoid is exactly 0 or 1 there
    assert LEARNED_ALPHA[0] <= float(m.alpha.detach()) <= LEARNED_ALPHA[1]
    assert 0 < LEARNED_ALPHA[0] and LEARNED_ALPHA[1] < 1
    _, v = m(drive(T=40), return_state=True)
    assert torch.isfinite(v).all()


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.neuron = FractionalLIF(alpha=0.5, learn_tau=True)

    def forward(self, x):  # [T, B, 3] -> [T, B, 2]
        return self.neuron(self.fc(x))


def test_a_non_finite_parameter_is_named_with_its_layer_and_value():
    model = Tiny()
    check_finite_parameters(model, "epoch 0")  # finite: nothing happens
    with torch.no_grad():
        model.fc.weight[1, 2] = float("nan")
    with pytest.raises(NonFiniteParameterError, match=r"^parameter weight of layer fc \(Linear\) is nan at \[1, 2\] "
                                                      r"\(1 of 6\) after the optimiser step of epoch 0; the last good "
                                                      r"checkpoint is kept$"):
        check_finite_parameters(model, "epoch 0")
    with torch.no_grad():
        model.fc.weight[1, 2] = 0.0
        model.neuron.tau_raw.fill_(float("-inf"))
    with pytest.raises(NonFiniteParameterError, match=r"^parameter tau_raw of layer neuron \(FractionalLIF\) is -inf "
                                                      r"after"):
        check_finite_parameters(model, "epoch 0")


def test_training_stops_at_the_step_that_made_a_parameter_non_finite():
    torch.manual_seed(0)
    x, y = torch.rand(8, 5, 3), torch.randint(0, 2, (8,))  # [B, T, features]: a sequence batch
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    module = SpikingClassifier(Tiny(), 2, lambda params: torch.optim.SGD(params, lr=float("inf")))
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    with pytest.raises(NonFiniteParameterError, match=r"after the optimiser step of epoch 0, step 1 \(batch 0\)"):
        trainer.fit(module, data)
    assert issubclass(NonFiniteParameterError, NonFiniteLossError)  # the commands report it in one line, exit 2
