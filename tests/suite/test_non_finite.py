"""Training stops at the step that made a parameter non-finite, naming the layer and the value."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch import nn

from fsnn import FractionalLIF
from fsnn.suite.training import (
    NonFiniteLossError,
    NonFiniteParameterError,
    SpikingClassifier,
    check_finite_parameters,
)


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
    with pytest.raises(
        NonFiniteParameterError,
        match=r"^parameter weight of layer fc \(Linear\) is nan at \[1, 2\] "
        r"\(1 of 6\) after the optimiser step of epoch 0; the last good "
        r"checkpoint is kept$",
    ):
        check_finite_parameters(model, "epoch 0")
    with torch.no_grad():
        model.fc.weight[1, 2] = 0.0
        model.neuron.tau_raw.fill_(float("-inf"))
    with pytest.raises(
        NonFiniteParameterError,
        match=r"^parameter tau_raw of layer neuron \(FractionalLIF\) is -inf "
        r"after",
    ):
        check_finite_parameters(model, "epoch 0")


def test_training_stops_at_the_step_that_made_a_parameter_non_finite():
    torch.manual_seed(0)
    x, y = torch.rand(8, 5, 3), torch.randint(0, 2, (8,))  # [B, T, features]: a sequence batch
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    module = SpikingClassifier(Tiny(), 2, lambda params: torch.optim.SGD(params, lr=float("inf")))
    trainer = L.Trainer(
        max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False
    )
    with pytest.raises(NonFiniteParameterError, match=r"after the optimiser step of epoch 0, step 1 \(batch 0\)"):
        trainer.fit(module, data)
    assert issubclass(NonFiniteParameterError, NonFiniteLossError)  # the commands report it in one line, exit 2
