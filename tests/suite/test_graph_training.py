"""Graph tasks through their Lightning modules: node classification (a softmax over the firing-rate read-out,
resamplings tested in bounded forwards, the spike-noise probe) and link prediction (AUC and AP), a non-finite loss
named, freed memory reused, and commands quiet about the libraries' future warnings."""

from __future__ import annotations

import subprocess
import sys

import lightning as L
import pytest
import torch
from tiny_graphs import (
    T,
    adam,
    cpu_trainer,
    encode,
    graph_model,
    mixed_probabilities,
    random_graph,
)
from torch import nn
from torch.nn import functional as F
from torch_geometric.data import Data

from fsnn.data.datamodules import (
    LinkDataModule,
    NodeDataModule,
)
from fsnn.models import (
    build_backbone,
)
from fsnn.models.probes import firing_rates
from fsnn.suite.tasks import spike_noise
from fsnn.suite.training import (
    GraphLinkPredictor,
    GraphNodeClassifier,
    NonFiniteLossError,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:.*self.trainer.*:UserWarning",
    "ignore::UserWarning:lightning.*",
    "ignore::lightning.fabric.utilities.warnings.PossibleUserWarning",
)


def test_poisson_spike_noise_probe_adds_gaussian_currents():
    """linear(noise_std=s) is W (spikes + noise) + b: the mean currents are the clean ones and the spread of one
    output is s * ||W_c|| (the noise is drawn per entry and step)."""
    x = mixed_probabilities(rows=64, features=40)
    weight = torch.randn(3, 40)
    clean = encode(x, steps=200).linear(weight)
    torch.manual_seed(1)
    noisy = encode(x, steps=200).linear(weight, noise_std=0.5)
    residual = noisy - clean
    assert abs(float(residual.mean())) < 0.05
    expected = 0.5 * weight.norm(dim=1)
    torch.testing.assert_close(residual.std((0, 1)), expected, rtol=0.05, atol=0.0)


def test_spike_noise_probe_changes_output_not_measured_rates(karate):
    model = graph_model("sgcn", "lif", karate.features.shape[1], 4).eval()
    with torch.no_grad():
        torch.manual_seed(0)
        with firing_rates(model) as clean_rates:
            clean = model(karate.features)
        torch.manual_seed(0)
        with spike_noise(model, 0.5), firing_rates(model) as noisy_rates:
            noisy = model(karate.features)
    assert model.spike_noise_std == 0.0
    assert not torch.equal(clean, noisy)
    assert clean_rates["encoder"] == noisy_rates["encoder"]  # the encoder's clean spikes are what is measured


# ------------------------------------------------------------------------------------------------- SGCN readout
def test_sgcn_readout_is_a_firing_rate_and_loss_is_one_softmax(karate):
    torch.manual_seed(0)
    model = graph_model("sgcn", "flif", karate.features.shape[1], 4)
    with torch.no_grad():
        model.fc.weight.mul_(5.0)  # make the tiny untrained model fire
    rates = model(karate.features)
    assert rates.shape == (34, 4)
    assert rates.min() >= 0 and rates.max() <= 1
    assert torch.allclose(rates * T, (rates * T).round())  # mean of T binary outputs
    assert rates.max() > 0  # the tiny test really fires

    module = GraphNodeClassifier(model, 4, adam(0.01))
    batch = (karate.features, karate.y)
    torch.manual_seed(7)
    loss = module.training_step(batch, 0)
    torch.manual_seed(7)
    expected = F.cross_entropy(model(karate.features), karate.y)
    assert torch.allclose(loss, expected)
    torch.manual_seed(7)
    double = F.cross_entropy(F.softmax(model(karate.features), dim=1), karate.y)
    assert not torch.allclose(loss, double)  # the authors' double softmax is not what is trained


def test_nonfinite_loss_raises():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(1))

        def forward(self, x):
            return x[:, :2] * self.w * float("nan")

    module = GraphNodeClassifier(Broken(), 2, adam(0.01))
    with pytest.raises(NonFiniteLossError):
        module.training_step((torch.ones(3, 4), torch.tensor([0, 1, 0])), 0)


# ------------------------------------------------------------------------------------------------ Lightning fits
def test_node_classifier_fit_beats_chance_on_karate(karate):
    L.seed_everything(0, verbose=False)
    model = build_backbone(
        "sgcn",
        in_features=karate.features.shape[1],
        num_classes=4,
        neuron="flif",
        neuron_kwargs={"threshold": 1.0, "tau": 2.0, "alpha": 0.5},
        T=T,
    )
    everything = torch.arange(34)
    dm = NodeDataModule(karate.features, karate.y, everything, everything, everything, batch_size=8, seed=0)
    module = GraphNodeClassifier(model, 4, adam(0.05), test_repeats=3, spike_noise_std=0.0)
    trainer = cpu_trainer(epochs=2)
    trainer.fit(module, dm)
    assert {"train/loss", "train/acc", "val/loss", "val/acc"} <= set(trainer.callback_metrics)
    trainer.test(module, dm, verbose=False)
    assert {
        "test/acc",
        "test/acc_std",
        "test/loss",
        "test/energy_mJ",
        "test/energy_output_rate_mJ",
        "test/rate/encoder",
        "test/rate/neuron",
    } <= set(trainer.callback_metrics)
    assert len(module.test_accuracies) == 3
    majority = torch.bincount(karate.y).max().item() / 34
    model.eval()
    with torch.no_grad():
        train_acc = (model(karate.features).argmax(1) == karate.y).float().mean().item()
    assert train_acc > max(0.25, majority), train_acc  # chance: 1/4; majority class: 13/34


def test_split_losses_are_means_over_the_samples_whatever_the_batches(karate):
    # batches of 8, 8, 8, 8 and 2 nodes: a mean of the batch means would count the last two nodes 4 times over
    torch.manual_seed(0)
    model = nn.Linear(karate.features.shape[1], 4)  # deterministic: the loss of every node is known
    everything = torch.arange(34)
    dm = NodeDataModule(karate.features, karate.y, everything, everything, everything, batch_size=8, seed=0)
    module, trainer = GraphNodeClassifier(model, 4, adam(0.05)), cpu_trainer()
    with torch.no_grad():
        expected = F.cross_entropy(model(karate.features), karate.y).item()
    trainer.validate(module, dm, verbose=False)  # ClassifierModule's steps
    assert trainer.callback_metrics["val/loss"].item() == pytest.approx(expected, rel=1e-6)
    trainer.test(module, dm, verbose=False)  # GraphNodeClassifier's own test
    assert trainer.callback_metrics["test/loss"].item() == pytest.approx(expected, rel=1e-6)


def test_node_classifier_tests_its_resamplings_in_bounded_forwards(karate, monkeypatch):
    """The test's re-samplings run as one forward while they fit test_chunk_elements, else in as few forwards of
    at most that many rows x T x classes as needed; every re-sampling is scored either way."""
    model = build_backbone(
        "sgcn", in_features=karate.features.shape[1], num_classes=4, neuron="lif", neuron_kwargs={}, T=T
    )
    everything = torch.arange(34)
    dm = NodeDataModule(
        karate.features, karate.y, everything, everything, everything, batch_size=8, seed=0, eval_batch_size=34
    )
    rows = []
    model.register_forward_hook(lambda _m, inputs, _out: rows.append(len(inputs[0])))
    for budget, forwards in ((1 << 25, [34 * 5]), (34 * T * 4 * 2, [68, 68, 34]), (1, [34] * 5)):
        module = GraphNodeClassifier(model, 4, adam(0.05), test_repeats=5)
        monkeypatch.setattr(module, "test_chunk_elements", budget)
        rows.clear()
        cpu_trainer().test(module, dm, verbose=False)
        assert rows == forwards and len(module.test_accuracies) == 5


def test_node_classifier_full_graph_msg_and_noise_probe(karate):
    L.seed_everything(0, verbose=False)
    model = build_backbone(
        "msg",
        in_features=karate.num_features,
        num_classes=4,
        neuron="fif",
        neuron_kwargs={"threshold": 0.2},
        T=5,
        dim=8,
        step_size=0.5,
    )
    with pytest.raises(ValueError, match="whole graph"):
        GraphNodeClassifier(model, 4, adam(0.05))
    dm = NodeDataModule.from_masks(
        None,
        Data(
            y=karate.y,
            train_mask=torch.ones(34, dtype=torch.bool),
            val_mask=torch.ones(34, dtype=torch.bool),
            test_mask=torch.ones(34, dtype=torch.bool),
        ),
        batch_size=None,
    )
    module = GraphNodeClassifier(model, 4, adam(0.05), graph=karate, spike_noise_std=0.3)
    trainer = cpu_trainer(epochs=2)
    trainer.fit(module, dm)
    trainer.test(module, dm, verbose=False)
    assert 0.0 <= float(trainer.callback_metrics["test/acc"]) <= 1.0
    assert "test/energy_mJ" in trainer.callback_metrics
    assert model.spike_noise_std == 0.0  # the probe is switched off after the test


LINK_MODELS = {
    "msg": lambda features: build_backbone(
        "msg",
        in_features=features,
        num_classes=None,
        neuron="fif",
        neuron_kwargs={"threshold": 0.2},
        T=5,
        dim=8,
        step_size=0.5,
    ),
    "gae": lambda features: build_backbone("gae", in_features=features, hidden=16, dim=8, neuron="fif", T=5),
}


@pytest.mark.parametrize("backbone", sorted(LINK_MODELS))
@pytest.mark.parametrize("features", ["real", "bag of words"])
def test_link_predictor_fit_logs_auc_and_ap(features, backbone):
    L.seed_everything(0, verbose=False)
    data = random_graph(n=50, p=0.15)
    if features == "bag of words":  # mostly zeros: the splits share one sparse CSR x, MSG multiplies it so
        data.x = (torch.rand(50, 300) < 0.02).float()
    model = LINK_MODELS[backbone](data.num_features)
    dm = LinkDataModule(data, num_val=0.1, num_test=0.1, seed=0)
    dm.setup()
    layouts = {part.x.layout for part in dm.splits}
    assert layouts == {torch.sparse_csr if features == "bag of words" else torch.strided} and dm.data is None
    assert all(part.x is dm.splits[0].x for part in dm.splits)
    module = GraphLinkPredictor(model, adam(0.01))
    trainer = cpu_trainer(epochs=2)
    trainer.fit(module, dm)
    fit_metrics = dict(trainer.callback_metrics)
    assert torch.isfinite(fit_metrics["train/loss"])
    trainer.test(module, dm, verbose=False)
    metrics = {**fit_metrics, **trainer.callback_metrics}
    for key in ("val/auc", "val/ap", "test/auc", "test/ap"):
        assert key in metrics and 0.0 <= float(metrics[key]) <= 1.0, key


def test_reuse_freed_memory_keeps_large_blocks_in_the_heap():
    """On glibc the commands raise malloc's thresholds, so a freed 44 MiB block is reused without new page faults,
    where glibc's default maps it afresh (one fault per page); elsewhere the call says it did nothing."""
    import platform
    import subprocess
    import sys

    from fsnn.suite.training import reuse_freed_memory

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        assert reuse_freed_memory() is False
        return
    # in fresh interpreters (the setting is process-wide): the median of the page faults of five cycles of
    # allocating, filling and freeing a 44 MiB tensor, once the first cycles have placed it (the median, since a
    # loaded machine can add one cycle's worth of faults to any run)
    code = (
        "import resource, statistics, sys, torch; from fsnn.suite.training import reuse_freed_memory\n"
        "ok = reuse_freed_memory() if sys.argv[1] == '1' else False\n"
        "for _ in range(2): a = torch.ones(11_000_000); del a\n"
        "counts = []\n"
        "for _ in range(5):\n"
        "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "    a = torch.ones(11_000_000); del a\n"
        "    counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)\n"
        "print(ok, int(statistics.median(counts)))"
    )

    def faults(flag: str) -> tuple[str, int]:
        ok, count = subprocess.run(
            [sys.executable, "-c", code, flag], capture_output=True, text=True, check=True
        ).stdout.split()
        return ok, int(count)

    pages = 11_000_000 * 4 // 4096
    assert faults("0")[0] == "False" and faults("0")[1] > pages // 2
    ok, count = faults("1")
    assert ok == "True" and count < pages // 10


def test_graph_commands_print_no_future_warning_of_the_libraries():
    """PyG (and geoopt) script helpers with the deprecated ``torch.jit.script`` at import: a FutureWarning on every
    graph run, unless the commands' ``quiet_libraries`` ignores it where it comes from."""

    def imports(first: str) -> subprocess.CompletedProcess:
        code = f"{first}import torch_geometric, geoopt"
        return subprocess.run(
            [sys.executable, "-W", "error::FutureWarning", "-c", code], capture_output=True, text=True, timeout=300
        )

    assert imports("").returncode != 0  # the warning is there to hide (an error under -W error)
    quiet = imports("from fsnn.suite.training import quiet_libraries; quiet_libraries(); ")
    assert quiet.returncode == 0 and "FutureWarning" not in quiet.stderr, quiet.stderr[-2000:]
