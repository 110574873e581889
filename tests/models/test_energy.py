"""Energy accounting (fsnn.models.energy, scripts/bench_energy.py) against hand calculations, and the energy study of a trained run
(evaluate.py study=energy, train.py study=energy)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from helpers import run_app
from torch import nn

from fsnn.models.energy import (
    E_AC_PJ,
    E_MAC_PJ,
    count_operations,
    energy_report,
    format_table,
    neuron_energy_pj,
)
from fsnn.models.layers import SeqConv2d, SeqFold
from fsnn.models.probes import firing_rates
from fsnn.neurons.fractional import FractionalLIF
from fsnn.neurons.registry import build_neuron

KAPPA = E_MAC_PJ / E_AC_PJ


class Tiny(nn.Module):
    """Linear(4, 3) -> LIF -> Linear(3, 2) on ``[T, B, 4]``."""

    def __init__(self, neuron: nn.Module | None = None):
        super().__init__()
        self.fc1 = nn.Linear(4, 3, bias=False)
        self.sn = neuron if neuron is not None else build_neuron("lif", tau=2.0, threshold=1.0)
        self.fc2 = nn.Linear(3, 2, bias=False)
        with torch.no_grad():
            self.fc1.weight.zero_()
            self.fc1.weight[0, 0] = 10.0  # neuron 0 gets 10 x[0]: with x[0] = 1 it spikes every step, the others never
            self.fc2.weight.fill_(1.0)

    def forward(self, x):
        return self.fc2(self.sn(self.fc1(x)))


def _tiny_input(T=2, B=1):
    x = torch.full((T, B, 4), 0.5)  # real-valued (not spikes): the first layer is a MAC layer anyway
    x[..., 0] = 1.0
    return x


def test_tiny_network_matches_hand_calculation():
    T, B = 2, 1
    model = Tiny()
    rows = count_operations(model, _tiny_input(T, B))
    assert [(r.name, r.energy_type) for r in rows] == [("fc1", "MAC"), ("sn", "Neuron"), ("fc2", "AC")]
    fc1, sn, fc2 = rows
    # fc1: 3 outputs x 4 inputs MACs per step, 2 steps, dense input at rate 1, E_MAC = 4.6 pJ
    assert fc1.ops == 24 and fc1.rate == 1.0
    assert fc1.energy_mj == pytest.approx(24 * 4.6e-9)
    # LIF (tau 2): V = 10/2 = 5 >= 1 at both steps for neuron 0, 0 for the others -> rate 2/6 = 1/3
    assert sn.ops == 3 and sn.rate == pytest.approx(1 / 3) and sn.kind == "LIF"
    rho = 1 / 3
    per_neuron = T * ((2 + 2 * rho) * KAPPA + (2 + rho)) * 0.9  # pJ, the paper's LIF formula
    assert sn.energy_mj == pytest.approx(3 * per_neuron * 1e-9)
    # fc2: 2 outputs x 3 inputs per step, 2 steps = 12 synaptic ops, AC x input rate 1/3 -> 4 ACs x 0.9 pJ
    assert fc2.ops == 12 and fc2.rate == pytest.approx(1 / 3) and fc2.spike_input
    assert fc2.energy_mj == pytest.approx(12 * (1 / 3) * 0.9e-9)
    report = energy_report(model, _tiny_input(T, B))
    assert report.synaptic_mj == pytest.approx((24 * 4.6 + 4 * 0.9) * 1e-9)
    assert report.neuron_mj == pytest.approx(3 * per_neuron * 1e-9)
    assert report.synaptic_share + report.neuron_share == pytest.approx(1.0)
    assert "fc2" in format_table(report) and "E_AC x 0.333" in format_table(report)


def test_energy_is_per_sample():
    model = Tiny()
    one = energy_report(model, _tiny_input(2, 1))
    many = energy_report(model, _tiny_input(2, 5))
    assert many.total_mj == pytest.approx(one.total_mj)
    assert [r.ops for r in many.layers] == [r.ops for r in one.layers]


def test_first_layer_on_spikes_can_be_counted_as_ac():
    model = Tiny()
    x = torch.zeros(2, 1, 4)
    x[:, :, :2] = 1.0  # binary input at rate 1/2
    dense = count_operations(model, x)[0]
    assert dense.energy_type == "MAC" and dense.energy_mj == pytest.approx(24 * 4.6e-9)
    sparse = count_operations(model, x, first_layer_mac=False)[0]
    assert sparse.energy_type == "AC" and sparse.rate == 0.5
    assert sparse.energy_mj == pytest.approx(24 * 0.5 * 0.9e-9)


def test_conv_op_count_equals_formula_inside_time_folding():
    T, B, C_in, C_out, H, k = 3, 2, 2, 4, 8, 3
    model = nn.Sequential(
        SeqConv2d(C_in, C_out, k, padding=1, stride=2),
        build_neuron("flif", alpha=0.5),
        SeqConv2d(C_out, 6, k, padding=1, groups=2),
        SeqFold(nn.Flatten()),
        SeqFold(nn.Linear(6 * 4 * 4, 5)),
    )
    x = torch.randn(T, B, C_in, H, H)
    rows = count_operations(model, x)
    names = [r.name for r in rows]
    assert names == ["0", "1", "2", "4.module"]  # the Linear inside SeqFold is hooked once, under its own name
    conv0, neuron, conv2, fc = rows
    out_hw = 4  # (8 + 2 - 3) // 2 + 1
    assert conv0.ops == T * (C_out * out_hw * out_hw) * (C_in * k * k)
    assert conv2.ops == T * (6 * out_hw * out_hw) * ((C_out // 2) * k * k)
    assert fc.ops == T * 5 * 6 * 4 * 4
    assert neuron.ops == C_out * out_hw * out_hw and neuron.kind == "f-LIF"
    # the measured input rate of conv2 is the nonzero fraction of the neuron's real output, also what firing_rates sees
    with torch.no_grad():
        spikes = model[1](model[0](x))
    assert conv2.rate == pytest.approx(float((spikes != 0).float().mean()))
    with firing_rates(model) as rates, torch.no_grad():
        model(x)
    assert conv2.rate == pytest.approx(rates["1"]) and neuron.rate == pytest.approx(rates["1"])
    assert conv2.energy_mj == pytest.approx(conv2.ops * conv2.rate * 0.9e-9)


def test_flif_energy_exceeds_lif_and_grows_with_memory():
    T = 8
    for rho in (0.0, 0.2, 0.9):
        lif = neuron_energy_pj("LIF", T, rho)
        full = neuron_energy_pj("f-LIF", T, rho)
        assert full > lif
        # f-LIF: T [(kappa + 1) log2 H + 1 + rho (2 kappa + 1)] E_AC, H = min(T, memory)
        assert full == pytest.approx(T * ((KAPPA + 1) * math.log2(T) + 1 + rho * (2 * KAPPA + 1)) * 0.9)
        by_memory = [neuron_energy_pj("f-LIF", T, rho, memory=m) for m in (1, 2, 4, 8, 16)]
        assert by_memory == sorted(by_memory) and by_memory[0] < by_memory[2] < by_memory[3]
        assert by_memory[3] == by_memory[4] == full  # memory >= T is the full history
    # through real forwards: the neuron's own memory is used; zero input keeps the rate at 0 for every memory
    x = torch.zeros(T, 2, 4)
    energies = []
    for memory in (2, 4, None):
        neuron = FractionalLIF(alpha=0.5, memory=memory)
        row = count_operations(Tiny(neuron), x)[1]
        assert row.kind == "f-LIF" and row.memory == memory and row.rate == 0.0
        energies.append(row.energy_mj)
    lif_row = count_operations(Tiny(), x)[1]
    assert energies == sorted(energies) and energies[0] < energies[1] < energies[2]
    assert energies[2] > lif_row.energy_mj


@pytest.mark.parametrize(
    "name,alpha,kind",
    [
        ("lif", None, "LIF"),
        ("flif", 0.5, "f-LIF"),
        ("fif", 0.5, "f-LIF"),
        ("fif", 1.0, "IF"),
        ("sj_lif", None, "LIF"),
        ("sj_if", None, "IF"),
    ],
)
def test_neuron_kinds(name, alpha, kind):
    from fsnn.models.energy import neuron_kind

    try:
        neuron = build_neuron(name) if alpha is None else build_neuron(name, alpha=alpha)
    except ImportError:
        pytest.skip(f"{name} needs an optional library")
    assert neuron_kind(neuron) == kind
    assert neuron_energy_pj("IF", 4, 0.3) < neuron_energy_pj("LIF", 4, 0.3)


def test_quick_mode_script(tmp_path):
    out = tmp_path / "quick.json"
    proc = run_app(
        "scripts/bench_energy.py",
        "--backbone",
        "dvsnet_small",
        "--dataset",
        "digits_dvs",
        "--neuron",
        "flif",
        "--T",
        "4",
        "--batch",
        "2",
        "--out",
        str(out),
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Synaptic energy share" in proc.stdout
    report = json.loads(out.read_text())
    assert report["layers"][0]["energy_type"] == "MAC" and report["total_mj"] > 0
    assert {r["kind"] for r in report["layers"] if r["energy_type"] == "Neuron"} == {"f-LIF"}


@pytest.mark.slow
def test_energy_study_after_training_and_on_the_run_folder(tmp_path, data_root):
    run = [
        "trainer.max_epochs=1",
        "trainer.limit_train_batches=2",
        "trainer.limit_val_batches=1",
        "trainer.limit_test_batches=1",
        "trainer.enable_progress_bar=false",
        "logger=none",
        "dataset.batch_size=8",
        "backbone.channels=8",
        "backbone.hidden=16",
        f"paths.data_dir={data_root}",
    ]
    proc = run_app("train.py", *run, "study=energy", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "E_overall" in proc.stdout  # the study ran after training, in the run's own folder
    run_dir = next((tmp_path / "runs" / "train").glob("*/.hydra/config.yaml")).parents[1]
    assert (run_dir / "checkpoints" / "best.ckpt").exists() and "study" not in run_dir.name
    after_training = json.loads((run_dir / "energy.json").read_text())
    (run_dir / "energy.json").unlink()
    ev = run_app(
        "evaluate.py", f"run_dir={run_dir}", "study=energy", f"paths.data_dir={data_root}", cwd=tmp_path, timeout=300
    )
    assert ev.returncode == 0, ev.stderr[-3000:]
    assert "E_overall" in ev.stdout and not (run_dir / "eval.json").exists()  # one forward pass, no re-test
    report = json.loads((run_dir / "energy.json").read_text())
    assert report["total_mj"] == after_training["total_mj"]  # the same study through the same seam
    assert report["checkpoint"].endswith("best.ckpt")
    layers = report["layers"]
    assert layers[0]["energy_type"] == "MAC"
    assert any(r["energy_type"] == "AC" for r in layers) and any(r["energy_type"] == "Neuron" for r in layers)
    assert all(0.0 <= r["rate"] <= 1.0 for r in layers)
    assert report["total_mj"] == pytest.approx(report["synaptic_mj"] + report["neuron_mj"])
    assert report["settings"]["T"] == 8
