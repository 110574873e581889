"""The sequence tasks (delayed_cue, seq_digits), the SeqMLP backbone, the sequence task kind, the neuron variants of the
memory-horizon benchmark, its table and its figure."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from helpers import CONF
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf
from sklearn.linear_model import LogisticRegression

from fsnn import build_neuron
from fsnn.data import (
    DATASETS,
    build_dataset,
    build_sequences,
    dataset_info,
    load_graph,
    sequences,
)
from fsnn.data.sequences import delayed_cue, seq_digits
from fsnn.models import backbone_names, backbone_supports, build_backbone

torch.set_num_threads(1)

VARIANTS = sorted(p.stem for p in (CONF / "neuron_variant").glob("*.yaml"))


def _decode_cue(x: np.ndarray, templates: np.ndarray) -> np.ndarray:
    """Nearest template (Hamming distance) to each sample's first ``cue_steps`` steps on the cue channels."""
    K, L, C = templates.shape
    cue = x[:, :L, :C].reshape(len(x), 1, -1).astype(int)
    return np.abs(cue - templates.reshape(1, K, -1).astype(int)).sum(-1).argmin(1)


# -- delayed_cue ------------------------------------------------------------------------------------------------------


def test_delayed_cue_layout():
    x, y, templates = delayed_cue(200, delay=10, num_cues=5, channels=6, cue_steps=3, recall_steps=2, data_seed=1)
    assert x.shape == (200, 3 + 10 + 2, 7) and x.dtype == np.uint8 and set(np.unique(x)) <= {0, 1}
    assert templates.shape == (5, 3, 6) and len({t.tobytes() for t in templates}) == 5
    assert np.bincount(y).tolist() == [40] * 5  # balanced: chance is 1/K
    go = x[:, :, -1]
    assert (go[:, -2:] == 1).all() and (go[:, :-2] == 0).all()  # "go" marks exactly the recall window
    # the cue is the template (OR background); after it, the cue channels carry background only, at noise_rate
    assert (x[:, :3, :6] >= templates[y]).all()
    assert abs(x[:, 3:, :6].mean() - 0.05) < 0.01


def test_delayed_cue_is_deterministic_per_seed_and_cues_do_not_depend_on_the_delay():
    a, b = delayed_cue(64, 20, data_seed=3), delayed_cue(64, 20, data_seed=3)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    other = delayed_cue(64, 20, data_seed=4)
    assert not np.array_equal(a[0], other[0]) and not np.array_equal(a[2], other[2])
    longer = delayed_cue(64, 200, data_seed=3)
    assert np.array_equal(longer[1], a[1]) and np.array_equal(longer[2], a[2])  # same labels, same cues


def test_delayed_cue_label_is_recoverable_from_the_cue_and_only_from_it():
    x, y, templates = delayed_cue(1000, delay=16, data_seed=0)
    assert (_decode_cue(x, templates) == y).mean() == 1.0  # the cue determines the label, background and all
    train, test = slice(0, 800), slice(800, None)
    features = x.reshape(len(x), -1).astype(np.float32)
    clf = LogisticRegression(max_iter=500).fit(features[train], y[train])
    assert clf.score(features[test], y[test]) > 0.95
    # without the cue steps nothing is left to learn: a classifier of everything after the cue is at chance (1/4)
    rest = x[:, 8:].reshape(len(x), -1).astype(np.float32)
    clf = LogisticRegression(max_iter=500).fit(rest[train], y[train])
    assert abs(clf.score(rest[test], y[test]) - 0.25) < 0.1  # 3 standard errors of 200 test samples at p = 1/4


@pytest.mark.parametrize(
    "kwargs,param",
    [
        (dict(delay=-1), "delay"),
        (dict(num_cues=1), "num_cues"),
        (dict(cue_rate=0.0), "cue_rate"),
        (dict(cue_rate=1.5), "cue_rate"),
        (dict(noise_rate=1.0), "noise_rate"),
        (dict(channels=0), "channels"),
        (dict(num_samples=3), "num_samples"),
        (dict(delay=2.5), "delay"),
        (dict(data_seed=-1), "data_seed"),
    ],
)
def test_delayed_cue_bad_arguments_name_the_parameter(kwargs, param):
    args = {"num_samples": 40, "delay": 4, **kwargs}
    with pytest.raises(ValueError, match=param):
        delayed_cue(args.pop("num_samples"), args.pop("delay"), **args)


# -- seq_digits -------------------------------------------------------------------------------------------------------


def test_seq_digits_is_the_digits_pixel_by_pixel():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = seq_digits()
    assert x.shape == (1797, 64, 1) and x.dtype == np.float32 and np.array_equal(y, digits.target)
    assert np.array_equal(x[:, :, 0].reshape(-1, 8, 8) * 16, digits.images)  # row by row: the label's image
    up, _ = seq_digits(upsample=3)
    assert up.shape == (1797, 192, 1) and np.array_equal(up[:, ::3], x) and np.array_equal(up[:, 2::3], x)


def test_seq_digits_permutation_is_fixed_per_seed_and_invertible():
    x, _ = seq_digits()
    p1, _ = seq_digits(permute=True, data_seed=1)
    assert np.array_equal(p1, seq_digits(permute=True, data_seed=1)[0]) and not np.array_equal(p1, x)
    assert not np.array_equal(p1, seq_digits(permute=True, data_seed=2)[0])
    order = np.random.default_rng(1).permutation(64)  # one permutation for every sample: the image is recoverable
    restored = np.empty_like(p1)
    restored[:, order] = p1
    assert np.array_equal(restored, x)
    with pytest.raises(ValueError, match="permute"):
        seq_digits(permute="yes")


# -- through the data layer -------------------------------------------------------------------------------------------


def test_sequence_tasks_are_registered_with_their_own_kind():
    assert {n for n, info in DATASETS.items() if info.kind == "sequence"} == {"delayed_cue", "seq_digits"}
    cue = dataset_info("delayed_cue")
    assert (cue.num_classes, cue.in_channels, cue.default_T) == (4, 17, 8 + 128 + 4)
    with pytest.raises(ValueError, match="build_sequences"):
        build_dataset("delayed_cue")
    with pytest.raises(ValueError, match="build_sequences"):
        load_graph("seq_digits")
    with pytest.raises(ValueError, match="load_graph"):
        build_sequences("cora")


def test_splits_shapes_and_seeds(tmp_path):
    train, val, test = build_sequences("delayed_cue", tmp_path, seed=0, delay=12, num_samples=400)
    assert (len(train), len(val), len(test)) == (288, 32, 80)
    x, label = train[0]
    assert x.shape == (8 + 12 + 4, 17) and x.dtype == torch.float32 and isinstance(label, int)
    assert train.readout_steps == 4 and train.num_classes == 4 and train.channels == 17 and train.steps == 24
    ids = [set(s.indices) for s in (train, val, test)]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2]) and len(set.union(*ids)) == 400
    assert np.bincount(test.targets).tolist() == [20] * 4  # stratified
    other = build_sequences("delayed_cue", tmp_path, seed=1, delay=12, num_samples=400)
    assert other[2].indices == test.indices and other[1].indices != val.indices  # fixed test, seeded validation
    digits = build_sequences("seq_digits", tmp_path, seed=0, upsample=2, readout_steps=16)
    assert digits[0][0][0].shape == (128, 1) and digits[0].readout_steps == 16 and digits[0].num_classes == 10


def test_generated_once_then_read_from_the_cache(tmp_path, monkeypatch):
    calls = []
    real = sequences.delayed_cue
    monkeypatch.setattr(sequences, "delayed_cue", lambda *a, **k: calls.append(1) or real(*a, **k))
    first = build_sequences("delayed_cue", tmp_path, delay=6, num_samples=80)
    again = build_sequences("delayed_cue", tmp_path, delay=6, num_samples=80, seed=3)
    assert len(calls) == 1 and torch.equal(first[0].x, again[0].x)
    assert len(list((tmp_path / "fsnn_cache" / "delayed_cue").glob("*.pt"))) == 1
    build_sequences("delayed_cue", tmp_path, delay=7, num_samples=80)  # another option set: its own entry
    assert len(calls) == 2
    for path in (tmp_path / "fsnn_cache" / "delayed_cue").glob("*.pt"):
        path.write_bytes(path.read_bytes()[:100])  # truncated: rebuilt, not trusted
    build_sequences("delayed_cue", tmp_path, delay=6, num_samples=80)
    assert len(calls) == 3


def test_bad_options_are_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"'delayed_cue' does not take \['dealy'\].*delay"):
        build_sequences("delayed_cue", tmp_path, dealy=5)
    with pytest.raises(ValueError, match="noise_rate"):
        build_sequences("delayed_cue", tmp_path, noise_rate=-0.1)
    with pytest.raises(ValueError, match="readout_steps"):
        build_sequences("seq_digits", tmp_path, readout_steps=65)
    with pytest.raises(ValueError, match="val_fraction"):
        build_sequences("seq_digits", tmp_path, val_fraction=1.0)
    assert not (tmp_path / "fsnn_cache").exists()  # nothing generated for a bad request


# -- the backbone -----------------------------------------------------------------------------------------------------


def _cue_batch(delay=6, n=8, seed=0):
    x, y, _ = delayed_cue(max(n, 4), delay, data_seed=seed)
    return torch.from_numpy(x[:n]).float().transpose(0, 1), torch.from_numpy(y[:n])


def test_seqmlp_is_registered_for_sequences_only():
    assert backbone_supports("seqmlp") == {"sequence"} and backbone_names("sequence") == ["seqmlp"]


@pytest.mark.parametrize("neuron", ["flif", "lif", "sj_lif", "sj_plif", "snntorch_leaky"])
def test_seqmlp_shapes_and_gradients(neuron):
    torch.manual_seed(0)
    model = build_backbone("seqmlp", in_features=17, num_classes=4, readout_steps=4, neuron=neuron, hidden=16)
    x, _ = _cue_batch()
    out = model(x)
    assert out.shape == (4, 8, 4) and torch.isfinite(out).all()
    out.sum().backward()
    assert model.layers[0].linear.weight.grad.abs().sum() > 0  # through both spiking layers to the input weights
    model.eval()
    assert torch.equal(model(x), model(x))
    with pytest.raises(ValueError, match=r"\[T >= 4, B, 17\]"):
        model(x[:, :, :5])
    with pytest.raises(ValueError, match="3 dimensions"):
        model(x[0])


def test_seqmlp_without_recurrence_remembers_only_through_its_neurons():
    # LIF with tau = 1 forgets everything at each step (H_t = X_t): then the readout cannot see an early input at all,
    # whereas f-LIF's history carries it to the end (eval mode: BatchNorm uses its running statistics)
    x, _ = _cue_batch(delay=3)
    changed = x.clone()
    changed[:2] = 1.0 - changed[:2]  # another cue in the first steps, same sequence afterwards
    for neuron, kwargs, remembers in (("lif", {"tau": 1.0}, False), ("flif", {"alpha": 0.5}, True)):
        torch.manual_seed(0)
        model = build_backbone(
            "seqmlp",
            in_features=17,
            num_classes=4,
            readout_steps=4,
            neuron=neuron,
            neuron_kwargs={**kwargs, "threshold": 0.2},
        ).eval()
        with torch.no_grad():
            assert (not torch.equal(model(x), model(changed))) == remembers, neuron


@pytest.mark.parametrize("neuron", ["flif", "lif", "sj_lif", "snntorch_leaky"])
def test_recurrent_layer_steps_its_neuron(neuron):
    from fsnn.models.probes import firing_rates

    torch.manual_seed(0)
    kwargs = {"threshold": 0.3, **({"engine": "direct"} if neuron in ("flif", "lif") else {})}  # exact as the plain
    options = dict(in_features=17, num_classes=4, readout_steps=4, neuron=neuron, hidden=16, neuron_kwargs=kwargs)
    model = build_backbone("seqmlp", recurrent=True, **options)
    plain = build_backbone("seqmlp", **options)
    plain.load_state_dict({k: v for k, v in model.state_dict().items() if "recurrent" not in k})
    x, _ = _cue_batch()
    for layer in model.layers:
        torch.nn.init.zeros_(layer.recurrent.weight)
    with torch.no_grad():  # training mode: BatchNorm normalises with the batch, so the layers spike
        with firing_rates(model) as stepped, firing_rates(plain) as whole:
            assert torch.equal(model(x), plain(x))  # R = 0: stepping gives the multi-step result exactly
        assert plain.layers[1](plain.layers[0](x)).sum() > 0
        for layer in model.layers:
            torch.nn.init.normal_(layer.recurrent.weight, std=0.5)
        assert not torch.equal(model(x), plain(x))
    assert stepped == whole and all(rate > 0 for rate in whole.values())  # the probes count every stepped neuron
    model(x).sum().backward()
    assert model.layers[0].recurrent.weight.grad.abs().sum() > 0


# -- the task kind and the configs ------------------------------------------------------------------------------------


def test_neuron_variants_differ_only_in_the_neuron():
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):  # one context: composing is then quick
        configs = {
            v: compose("config", ["experiment=memory_horizon", "dataset.delay=32", f"+neuron_variant={v}"])
            for v in VARIANTS
        }
    GlobalHydra.instance().clear()
    assert len(VARIANTS) == 12
    # the csv logger's folder needs a run; tau_lr_scale is the learned-tau neurons' own (their tuned variants)
    shared = [k for k in configs["lif"] if k not in ("neuron", "logger", "tau_lr_scale")]
    rest = {v: OmegaConf.to_container(OmegaConf.masked_copy(c, shared), resolve=True) for v, c in configs.items()}
    assert all(r == rest["flif_a05"] for r in rest.values())
    neurons = {v: OmegaConf.to_container(c.neuron, resolve=True) for v, c in configs.items()}
    assert neurons["lif_tau_delay"]["tau"] == 32 and neurons["lif"]["tau"] == neurons["sj_lif"]["tau"] == 2.0
    assert neurons["flif_a02"]["alpha"] == 0.2 and neurons["flif_learn_alpha"]["learn_alpha"]
    assert neurons["lif_learn_tau"]["learn_tau"] and neurons["sj_plif"]["name"] == "sj_plif"
    assert {v: c.tau_lr_scale for v, c in configs.items() if c.tau_lr_scale != 1} == {
        "lif_learn_tau_tuned": 100,
        "sj_plif_tuned": 100,
    }
    assert neurons["lif_learn_tau_tuned"] == neurons["lif_learn_tau"] and neurons["sj_plif_tuned"] == neurons["sj_plif"]
    for variant, options in neurons.items():
        name = options.pop("name")
        assert build_neuron(name, **options)(torch.rand(3, 2, 4) * 3).shape == (3, 2, 4), variant


def test_sweeps_cover_every_variant(compose_cfg):
    memory = compose_cfg("experiment=memory_horizon").hydra.sweeper.params
    assert sorted(memory["+neuron_variant"].split(",")) == VARIANTS
    assert len(memory["seed"].split(",")) >= 3 and len(memory["dataset.delay"].split(",")) >= 4
    digits = compose_cfg("experiment=seq_digits").hydra.sweeper.params
    assert sorted(digits["+neuron_variant"].split(",")) == sorted(set(VARIANTS) - {"lif_tau_delay"})
    assert len(digits["seed"].split(",")) >= 3 and digits["dataset.permute"] == "false,true"


def test_delayed_cue_variants_take_one_thing_away():
    L, R, C = 8, 4, 16
    base = delayed_cue(100, delay=12, data_seed=2)
    quiet = delayed_cue(100, delay=12, delay_noise=False, data_seed=2)
    no_go = delayed_cue(100, delay=12, go_channel=False, data_seed=2)
    for variant in (quiet, no_go):  # the same cues and labels
        assert np.array_equal(variant[1], base[1]) and np.array_equal(variant[2], base[2])
    assert base[0][:, L:-R, :C].any() and not quiet[0][:, L:-R].any()  # silent between cue and recall
    assert np.array_equal(quiet[0][:, :L], base[0][:, :L]) and np.array_equal(quiet[0][:, -R:], base[0][:, -R:])
    assert np.array_equal(no_go[0], base[0][:, :, :C])  # the go channel, and only it, is gone


def _trained_two_epochs(tmp_path, *overrides: str) -> dict:
    """The ``metrics.json`` of a two-epoch smoke run of the delayed cue at delay 4 through ``train.py``."""
    import json

    from helpers import run_app

    proc = run_app(
        "train.py",
        "dataset=delayed_cue",
        "backbone=seqmlp",
        "dataset.delay=4",
        "+smoke=sequence",
        "trainer.max_epochs=2",
        *overrides,
        f"paths.data_dir={tmp_path}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(next((tmp_path / "runs").rglob("metrics.json")).read_text())


def test_a_run_records_its_neurons_and_their_learned_values_per_epoch(tmp_path):
    from fsnn.neurons import cpu_kernels

    m = _trained_two_epochs(tmp_path, "+neuron_variant=lif_learn_tau", "tau_lr_scale=50")
    assert set(m["neurons"]) == {"layers.0.neuron", "layers.1.neuron"}
    # the direct engine: the compiled CPU loops where they build (fsnn.neurons.cpu_kernels), else torch's
    direct = "cpp-direct" if cpu_kernels.unavailable_reason() is None else "direct"
    for entry in m["neurons"].values():
        assert entry["type"] == "FractionalLIF" and entry["engine"] == direct and entry["tau_learned"]
        assert entry["alpha"] == 1.0 and not entry["alpha_learned"] and entry["tau_std"] == 0.0
    epochs = m["neurons_by_epoch"]
    assert [e["epoch"] for e in epochs] == [0, 1, 2]
    assert all(v["tau_mean"] == pytest.approx(2.0) for v in epochs[0]["neurons"].values())  # where it started
    assert {k: {"tau_mean": v["tau_mean"], "tau_std": v["tau_std"]} for k, v in m["neurons"].items()} in [
        e["neurons"] for e in epochs[1:]
    ]  # "neurons" describes the best checkpoint, one of the epochs
    assert any(v["tau_mean"] != pytest.approx(2.0, abs=1e-4) for v in epochs[-1]["neurons"].values())  # it learned


def test_a_recurrent_network_of_fractional_neurons_trains_through_fsnn_train(tmp_path):
    m = _trained_two_epochs(tmp_path, "+neuron_variant=flif_learn_alpha", "backbone.recurrent=true")
    assert m["status"] == "complete" and m["config"]["backbone"]["recurrent"] is True
    for entry in m["neurons"].values():  # stepped with the constant sum-of-exponentials state
        assert entry["type"] == "FractionalLIF" and entry["engine"] == "state-soe" and entry["alpha_learned"]
    epochs = m["neurons_by_epoch"]
    assert all(v["alpha"] == pytest.approx(0.5) for v in epochs[0]["neurons"].values())  # where it started
    assert any(v["alpha"] != pytest.approx(0.5, abs=1e-5) for v in epochs[-1]["neurons"].values())  # it learned
