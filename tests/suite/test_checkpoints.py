"""Checkpoints and the files beside them: a round trip, a damaged one named with its problem, weights that do
not fit, files with the umask's mode, a full disk named, earlier generations kept, and nothing from a run folder
executed or unpickled."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers import (
    ROOT,
    TINY,
    run_app,
    run_dir,
    snapshot,
)
from interrupt import FillingUp
from omegaconf import OmegaConf
from zipdata import flip_tensor_byte

from fsnn.atomic import write_json_atomic
from fsnn.checks import ConfigError
from fsnn.suite.checkpoint import (
    CheckpointError,
    RunCheckpointIO,
    check_fits,
    load_checkpoint,
    result_config,
    save_checkpoint,
)
from fsnn.suite.evaluate import open_run
from fsnn.suite.runfiles import run_lock

CONFIG = {"neuron": {"name": "flif", "alpha": 0.5}, "seed": 0}


def _checkpoint(path: Path, config=CONFIG) -> dict:
    state = {
        "state_dict": {"w": torch.randn(64, 32), "b": torch.zeros(32)},
        "epoch": 3,
        "global_step": 12,
        "callbacks": {"ModelCheckpoint": {"best_model_score": torch.tensor(0.5), "dirpath": str(path.parent)}},
        "loops": {"fit_loop": {"epoch_progress": {"total": {"ready": 4}}}},
    }
    save_checkpoint(state, path, config)
    return state


def test_checkpoint_round_trip(tmp_path):
    state = _checkpoint(tmp_path / "last.ckpt")
    loaded = load_checkpoint(tmp_path / "last.ckpt", CONFIG)
    assert torch.equal(loaded["state_dict"]["w"], state["state_dict"]["w"]) and loaded["epoch"] == 3
    assert "fsnn" not in loaded and not list(tmp_path.glob(".*tmp*"))


class Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (Path(self.marker),))


def _damage(path: Path, how: str, tmp_path: Path) -> None:
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "random bytes":
        path.write_bytes(os.urandom(path.stat().st_size))
    elif how == "bit flip in tensor data":
        flip_tensor_byte(path)
    elif how == "another run's":
        _checkpoint(path, {**CONFIG, "seed": 1})
    elif how == "not written by fsnn":
        torch.save({"state_dict": {"w": torch.zeros(2)}}, path)
    elif how == "pickle payload":
        path.write_bytes(pickle.dumps({"state_dict": Payload(str(tmp_path / "PAYLOAD_RAN"))}))


@pytest.mark.parametrize(
    "how,problem",
    [
        ("truncated", "cannot be read"),
        ("empty", "cannot be read"),
        ("random bytes", "cannot be read"),
        ("bit flip in tensor data", "does not match the digest"),
        ("another run's", r"belongs to another run .*seed: 1 -> 0"),
        ("not written by fsnn", "no fsnn integrity record"),
        ("pickle payload", "cannot be read"),
    ],
)
def test_damaged_checkpoint_is_one_error_naming_the_file(tmp_path, how, problem):
    path = tmp_path / "last.ckpt"
    _checkpoint(path)
    _damage(path, how, tmp_path)
    with pytest.raises(CheckpointError, match=problem) as error:
        load_checkpoint(path, CONFIG)
    assert str(path) in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "PAYLOAD_RAN").exists()  # weights_only: no code runs


def test_weights_that_do_not_fit_the_model_built_now_are_one_error_naming_the_tensor(tmp_path):
    path = tmp_path / "best.ckpt"
    model = torch.nn.Sequential(torch.nn.Linear(3, 2))
    for state, problem in (
        (
            {"0.weight": torch.zeros(2, 5), "0.bias": torch.zeros(2)},
            r"its 0.weight has shape \[2, 5\] where the model built now has \[2, 3\]",
        ),
        ({"0.weight": torch.zeros(2, 3)}, "it lacks 0.bias"),
        ({**model.state_dict(), "1.weight": torch.zeros(1)}, "it holds 1.weight"),
    ):
        with pytest.raises(CheckpointError, match=problem) as error:
            check_fits(model, {"state_dict": state}, path)
        assert str(error.value).startswith(f"checkpoint {path}: ") and "force=true" in str(error.value)
    check_fits(model, {"state_dict": model.state_dict()}, path)
    # what Lightning resumes and tests from goes through the same check
    save_checkpoint({"state_dict": {"0.weight": torch.zeros(2, 5), "0.bias": torch.zeros(2)}}, path, CONFIG)
    with pytest.raises(CheckpointError, match="its 0.weight has shape"):
        RunCheckpointIO(CONFIG, model).load_checkpoint(path)


def test_evaluate_on_data_with_another_feature_count_is_one_error_naming_it(tmp_path, compose_cfg, data_root):
    """A run evaluated where its data changed shape since training (here its first layer saved for 1000 features,
    as the data once had): one error naming the tensor and both shapes, no load_state_dict traceback."""
    from fsnn.suite.evaluate import evaluate_run
    from fsnn.suite.tasks import build_task

    cfg = compose_cfg("dataset=cora", "backbone=sgcn", "logger=none", "dataset.T=2", f"paths.data_dir={data_root}")
    cfg = OmegaConf.create({k: v for k, v in cfg.items() if k != "hydra"})
    run = tmp_path / "run"
    (run / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    state = build_task(cfg).module.state_dict()
    first = next(k for k, v in state.items() if v.dim() == 2 and v.shape[1] == 1433)
    state[first] = torch.zeros(state[first].shape[0], 1000)
    save_checkpoint({"state_dict": state}, run / "checkpoints" / "best.ckpt", result_config(cfg))
    with pytest.raises(
        CheckpointError,
        match=rf"its {first} has shape \[\d+, 1000\] where the model built now has "
        r"\[\d+, 1433\]: the data or fsnn changed",
    ) as error:
        evaluate_run(run, data_dir=str(data_root))
    assert "\n" not in str(error.value) and not (run / "eval.json").exists()


def test_a_shared_run_folder_builds_nothing_outside_fsnn(tmp_path, compose_cfg):
    # `_target_: shutil.copyfile` in a run folder's .hydra/config.yaml once copied a file when evaluated
    cfg = OmegaConf.create({k: v for k, v in compose_cfg("logger=none").items() if k != "hydra"})
    marker = tmp_path / "COPIED"
    cfg.optimizer = {"_target_": "shutil.copyfile", "src": str(tmp_path / "a"), "dst": str(marker)}
    (tmp_path / "a").write_text("x")
    (tmp_path / "run" / ".hydra").mkdir(parents=True)
    OmegaConf.save(cfg, tmp_path / "run" / ".hydra" / "config.yaml")
    with pytest.raises(
        ConfigError,
        match=r"config.yaml: optimizer._target_: expected one of torch.optim.Adam, "
        r"torch.optim.AdamW, torch.optim.SGD, got 'shutil.copyfile'",
    ):
        open_run(tmp_path / "run")
    assert not marker.exists()


def test_a_run_folder_saved_under_the_earlier_names_opens_with_the_current_ones(tmp_path, compose_cfg):
    """A run trained before the ``authors_*`` options had their names is re-tested as it was trained."""
    cfg = compose_cfg("logger=none", "dataset=cora", "backbone=sgcn", "+recipe_switch=flif/fspikede")
    saved = {k: v for k, v in OmegaConf.to_container(cfg, resolve=False).items() if k != "hydra"}
    current = dict(saved["backbone"])
    saved["recipe_switch"] = "legacy"
    saved["backbone"] = {key.replace("authors_", "legacy_"): value for key, value in current.items()}
    (tmp_path / "run" / ".hydra").mkdir(parents=True)
    OmegaConf.save(OmegaConf.create(saved), tmp_path / "run" / ".hydra" / "config.yaml")
    run_cfg, _ = open_run(tmp_path / "run")
    assert OmegaConf.to_container(run_cfg.backbone) == current and run_cfg.backbone.authors_frozen_encoding
    assert run_cfg.recipe_switch == "fspikede"


@pytest.mark.parametrize("payload", ["pickle", "target"])
def test_energy_study_runs_no_payload_from_a_run_folder(tmp_path, compose_cfg, payload):
    cfg = OmegaConf.create({k: v for k, v in compose_cfg("logger=none").items() if k != "hydra"})
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    marker = tmp_path / "PAYLOAD_RAN"
    if payload == "target":
        cfg.scheduler = {"_target_": "pathlib.Path.touch", "self": str(marker)}
    else:
        (run / "checkpoints" / "best.ckpt").write_bytes(pickle.dumps(Payload(str(marker))))
    (run / ".hydra").mkdir()
    OmegaConf.save(cfg, run / ".hydra" / "config.yaml")
    proc = run_app("evaluate.py", f"run_dir={run}", "study=energy", cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and not marker.exists(), proc.stderr[-2000:]
    assert proc.stderr.startswith("fsnn: error: ") and proc.stderr.count("\n") == 1
    assert ("best.ckpt" if payload == "pickle" else "scheduler._target_") in proc.stderr


def test_files_get_the_umask_s_mode(tmp_path):
    old = os.umask(0o002)
    try:
        write_json_atomic(tmp_path / "metrics.json", {"status": "complete"})
        _checkpoint(tmp_path / "last.ckpt")
        with run_lock(tmp_path):
            modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    finally:
        os.umask(old)
    assert modes == {"metrics.json": 0o664, "last.ckpt": 0o664, ".lock": 0o664}
    assert not (tmp_path / ".lock").exists()  # removed when the block ends


@pytest.mark.slow
def test_damaged_last_checkpoint_of_an_interrupted_run_is_named(tmp_path, data_root):
    args = [*TINY, f"paths.data_dir={data_root}"]
    env = {**os.environ, "WANDB_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, str(ROOT / "tests" / "interrupt.py"), "between-epochs", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=900,
    )
    run = run_dir(tmp_path)
    last = run / "checkpoints" / "last.ckpt"
    good = last.read_bytes()
    killed = (run / "metrics.json").read_bytes()  # what the killed run left: its record of a run in progress
    for how in ("bit flip in tensor data", "truncated"):
        last.write_bytes(good)
        _damage(last, how, tmp_path)
        before = snapshot(run / "checkpoints")
        proc = run_app("train.py", *args, cwd=tmp_path)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
        assert proc.stderr.startswith(f"fsnn: error: checkpoint {last}: ") and "delete it and rerun" in proc.stderr
        assert snapshot(run / "checkpoints") == before  # nothing deleted or rewritten
        assert (run / "metrics.json").read_bytes() == killed  # the refused resume took nothing over
    last.unlink()
    proc = run_app("train.py", *args, cwd=tmp_path)  # what the message says: resumes from best.ckpt
    assert proc.returncode == 0 and json.loads((run / "metrics.json").read_text())["status"] == "complete"


def test_checkpoint_state_names_its_files_relative_to_its_folder(tmp_path):
    from fsnn.suite.checkpoint import RelativeModelCheckpoint

    old, new = tmp_path / "old" / "checkpoints", tmp_path / "new" / "checkpoints"
    writer = RelativeModelCheckpoint(dirpath=old, filename="best", monitor="val/acc", mode="max")
    writer.best_model_path = writer.kth_best_model_path = str(old / "best.ckpt")
    writer.best_k_models = {str(old / "best.ckpt"): torch.tensor(0.5)}
    writer.best_model_score = torch.tensor(0.5)
    state = writer.state_dict()
    assert str(tmp_path) not in repr(state) and state["best_model_path"] == "best.ckpt"
    # the state key is ModelCheckpoint's: checkpoints written before restore into it, and the other way round
    from lightning.pytorch.callbacks import ModelCheckpoint

    assert writer.state_key == ModelCheckpoint(dirpath=old, filename="best", monitor="val/acc", mode="max").state_key
    for stored in (
        state,
        {
            **state,
            "best_model_path": "/elsewhere/checkpoints/best.ckpt",  # written before: absolute
            "dirpath": "/elsewhere/checkpoints",
            "best_k_models": {"/elsewhere/checkpoints/best.ckpt": torch.tensor(0.5)},
        },
    ):
        reader = RelativeModelCheckpoint(dirpath=new, filename="best", monitor="val/acc", mode="max")
        reader.load_state_dict(stored)
        assert Path(reader.best_model_path) == Path(reader.dirpath) / "best.ckpt"
        assert list(reader.best_k_models) == [reader.best_model_path] and float(reader.best_model_score) == 0.5


def test_force_keeps_every_earlier_generation(tmp_path):
    from fsnn.suite.run import _set_aside

    run = tmp_path / "run"
    for generation in (1, 2, 3):
        write_json_atomic(run / "metrics.json", {"status": "complete", "generation": generation})
        _checkpoint(run / "checkpoints" / "best.ckpt", {**CONFIG, "seed": generation})
        write_json_atomic(run / "energy.json", {"generation": generation})
        _set_aside(run)
    for generation in (1, 2, 3):
        kept = run / f"previous.{generation}"
        assert json.loads((kept / "metrics.json").read_text())["generation"] == generation
        assert json.loads((kept / "energy.json").read_text())["generation"] == generation
        load_checkpoint(kept / "checkpoints" / "best.ckpt", {**CONFIG, "seed": generation})
    assert sorted(p.name for p in run.iterdir()) == ["previous.1", "previous.2", "previous.3"]
    from fsnn.report.collect import (
        scan_runs,  # an earlier generation is not a run of its own in the tables
    )

    write_json_atomic(run / "metrics.json", {"status": "complete", "generation": 4, "test_acc": 0.5})
    assert [r["generation"] for r in scan_runs(tmp_path).complete] == [4]


@pytest.mark.parametrize("what", ["checkpoint", "metrics.json", "torch's RuntimeError"])
def test_a_full_disk_is_one_error_naming_the_file_and_its_free_space(tmp_path, monkeypatch, what):
    import fsnn.atomic
    from fsnn.suite.run import USER_ERRORS

    path = tmp_path / ("last.ckpt" if what == "checkpoint" else "metrics.json")
    write = {
        "checkpoint": lambda: _checkpoint(path),
        "metrics.json": lambda: write_json_atomic(path, {"status": "running", "pad": "x" * 8000}),
        "torch's RuntimeError": lambda: fsnn.atomic.write_atomic(path, _torch_style_failure),
    }
    write[what]()
    before = path.read_bytes()
    monkeypatch.setattr(fsnn.atomic, "open", lambda p, mode="r": io.BufferedWriter(FillingUp(p, "wb")), raising=False)
    with pytest.raises(OSError) as error:
        write[what]()
    assert isinstance(error.value, USER_ERRORS)  # train.py and evaluate.py: this one line, exit status 2
    message = str(error.value)
    assert message.startswith(f"cannot write {path}: ") and "MiB free" in message and "\n" not in message
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no partial


def _torch_style_failure(handle):
    """torch's zip writer reports a failed write as a RuntimeError raised while handling the OSError."""
    try:
        handle.write(b"x" * 20000)  # more than the buffer: the disk is written now
    except OSError:
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos") from None
