"""Checkpoints a run can trust: written atomically, checked when read, loaded without running code, and complete
enough that a run resumed from one ends bit-identical to a run that was never interrupted.

- :class:`RunCheckpointIO` (a Lightning ``CheckpointIO`` plugin) writes each checkpoint through
  :func:`fsnn.atomic.write_atomic` (a kill leaves the previous file whole) with an integrity record: the digest of
  its content (:func:`fsnn.atomic.content_digest`) and the run's result config (:func:`result_config`: the config
  without the keys that change no result, what a finished run is compared on too).
  Reading it back (:func:`load_checkpoint`) uses ``torch.load(weights_only=True)``, so a crafted pickle cannot run,
  and refuses a file that is unreadable, altered or another run's with one :class:`CheckpointError` naming it.
- :class:`RelativeModelCheckpoint` (Lightning's ``ModelCheckpoint``) stores the paths it keeps in a checkpoint
  (``best_model_path``...) relative to the checkpoints' folder, so that a copied or moved run folder resumes and tests
  from its own files only.
- :class:`RNGStates` (a Lightning callback) puts the random states of torch (CPU and CUDA), numpy and Python into
  every checkpoint and restores them on resume; the training order needs none, it is a function of the seed and the
  epoch (:class:`fsnn.suite.training.SplitDataModule`).
"""

from __future__ import annotations

import os
import random
import warnings
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.fabric.plugins import TorchCheckpointIO
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from fsnn.atomic import content_digest, write_atomic
from fsnn.runs.renames import current_config
from fsnn.suite.runfiles import tree_changes

RECORD = "fsnn"  # the checkpoint key of the integrity record
#: keys (and the keys under them) that do not change a run's result: where files go, logging, progress bars, loader
#: processes, the studies run after training. They are left out of the config a finished run is compared with and,
#: with the launcher's own keys (:data:`FOLDER_EXCLUDED`), out of a run folder's name.
NON_RESULT_KEYS = (
    "run_name",
    "force",
    "paths",
    "logger",
    "study",
    "robustness",
    "trainer.enable_progress_bar",
    "dataset.num_workers",
)
FOLDER_EXCLUDED = (*NON_RESULT_KEYS, "experiment", "launcher", "hydra.launcher.n_jobs")


def non_result(key: str, keys: tuple[str, ...] = NON_RESULT_KEYS) -> bool:
    """Whether ``key`` (dotted) is one of ``keys`` or under one."""
    return any(key == k or key.startswith(k + ".") for k in keys)


def strip_non_result(values: dict) -> dict:
    """A copy of a plain config tree without Hydra's node and :data:`NON_RESULT_KEYS`."""

    def strip(node: dict, path: str) -> dict:
        return {
            k: strip(v, f"{path}{k}.") if isinstance(v, dict) else v
            for k, v in node.items()
            if not non_result(f"{path}{k}")
        }

    return strip({k: v for k, v in values.items() if k != "hydra"}, "")


def result_config(cfg: DictConfig) -> dict:
    """The resolved config of a run without :data:`NON_RESULT_KEYS` (and Hydra's own node): what its result depends
    on. A finished run is redone only when this changes (or with ``force=true``); a checkpoint is only read by a run
    of the same result config. Stripped before resolving: the logger's folder is only known inside a Hydra job."""
    stripped = strip_non_result(OmegaConf.to_container(cfg, resolve=False))
    return OmegaConf.to_container(OmegaConf.create(stripped), resolve=True)


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: ``str(err)`` names the file, what is wrong with it and what to do."""

    def __init__(self, path: str | Path, problem: str, hint: str = ""):
        self.path, self.problem = Path(path), problem
        super().__init__(f"checkpoint {path}: {problem}" + (f"; {hint}" if hint else ""))


def save_checkpoint(checkpoint: dict, path: str | Path, config: dict | None) -> None:
    """Write ``checkpoint`` to ``path`` atomically, with its integrity record."""
    body = {k: v for k, v in checkpoint.items() if k != RECORD}
    record = {"digest": content_digest(body), "config": config}
    write_atomic(path, lambda handle: torch.save({**body, RECORD: record}, handle))


def load_checkpoint(path: str | Path, config: dict | None = None, map_location: Any = "cpu") -> dict:
    """The checkpoint at ``path``, verified: readable with ``weights_only=True``, its content matching its digest and,
    when ``config`` is given, written by a run of that result config. :class:`CheckpointError` otherwise."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(path, "does not exist")
    try:
        with warnings.catch_warnings():  # a foreign pickle's protocol warning: the error below says it all
            warnings.filterwarnings("ignore", message="Detected pickle protocol", category=UserWarning)
            checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # noqa: BLE001 - whatever torch says, the file is unusable
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if "weights_only" in str(error) or "Unsupported global" in str(error):
            reason = "it holds Python objects other than tensors and plain data, which fsnn never writes"
        raise CheckpointError(
            path, f"cannot be read ({reason[:200]}); the file is truncated, damaged or not a checkpoint"
        ) from None
    record = checkpoint.pop(RECORD, None) if isinstance(checkpoint, dict) else None
    if not isinstance(record, dict) or "digest" not in record:
        raise CheckpointError(path, "has no fsnn integrity record (it was not written by fsnn's train.py)")
    if content_digest(checkpoint) != record["digest"]:
        raise CheckpointError(
            path,
            "its content does not match the digest written with it (the file was altered "
            "after it was written, e.g. by disk or copy corruption)",
        )
    recorded = current_config(record.get("config") or {})
    if config is not None and recorded != config:
        changes = tree_changes(recorded, config)
        shown = "; ".join(changes[:3]) + (f"; and {len(changes) - 3} more" if len(changes) > 3 else "")
        raise CheckpointError(path, f"belongs to another run (its config differs: {shown})")
    return checkpoint


def check_fits(module: torch.nn.Module, checkpoint: dict, path: str | Path) -> None:
    """The weights of ``checkpoint`` fit ``module`` as the run's config and data build it now, tensor by tensor (name
    and shape): :class:`CheckpointError` naming the first that does not, where ``load_state_dict`` would fail with a
    traceback. A run's config is checked with its checkpoint (:func:`load_checkpoint`); what changes a model's shapes
    besides is the data (another feature count) or the code that builds it."""
    state, own = checkpoint.get("state_dict") or {}, module.state_dict()
    shapes = [
        (key, tuple(getattr(state[key], "shape", ())), tuple(value.shape))
        for key, value in own.items()
        if key in state and tuple(getattr(state[key], "shape", ())) != tuple(value.shape)
    ]
    missing, extra = [k for k in own if k not in state], [k for k in state if k not in own]
    if shapes:
        key, saved, built = shapes[0]
        problem = f"its {key} has shape {list(saved)} where the model built now has {list(built)}"
    elif missing or extra:
        problem = (
            f"it lacks {missing[0]}, which the model built now has"
            if missing
            else f"it holds {extra[0]}, which the model built now lacks"
        )
    else:
        return
    count = len(shapes) + len(missing) + len(extra)
    raise CheckpointError(
        path,
        f"{problem}{f' ({count} tensors differ)' if count > 1 else ''}: the data or fsnn "
        "changed since the run was trained (e.g. another feature count)",
        "use it with the data and fsnn it was trained with (its metrics.json records its split "
        "sizes and versions), or rerun its train.py command with force=true to train it on these",
    )


class RunCheckpointIO(TorchCheckpointIO):
    """Lightning's checkpoint IO for fsnn runs: atomic writes with an integrity record, verified safe reads.
    ``config``: the run's result config, stored in every checkpoint and required of every checkpoint read;
    ``module``: the model the checkpoints read are loaded into (:func:`check_fits`)."""

    def __init__(self, config: dict | None = None, module: torch.nn.Module | None = None):
        self.config, self.module = config, module

    def save_checkpoint(self, checkpoint: dict[str, Any], path, storage_options: Any | None = None) -> None:
        save_checkpoint(checkpoint, path, self.config)

    def load_checkpoint(self, path, map_location: Any | None = None, weights_only: bool | None = None) -> dict:
        checkpoint = load_checkpoint(path, self.config, map_location="cpu" if map_location is None else map_location)
        if self.module is not None:
            check_fits(self.module, checkpoint, path)
        return checkpoint


class RelativeModelCheckpoint(ModelCheckpoint):
    """Lightning's ``ModelCheckpoint`` whose state in a checkpoint names its files relative to its folder
    (``best.ckpt``, not ``/where/it/ran/checkpoints/best.ckpt``): restored, they are the files of the folder the run
    now lives in. A path stored absolute, or one naming another folder, is read as the file of the same name in this
    folder.
    Its state key is ``ModelCheckpoint``'s, so checkpoints written by either class restore into the other."""

    _PATHS = ("best_model_path", "kth_best_model_path", "last_model_path")

    def _generate_state_key(self, **kwargs) -> str:
        return f"ModelCheckpoint{kwargs!r}"

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        folder = str(self.dirpath)
        state.update({key: os.path.relpath(state[key], folder) if state[key] else "" for key in self._PATHS})
        state["best_k_models"] = {
            os.path.relpath(path, folder): score for path, score in state["best_k_models"].items()
        }
        state["dirpath"] = "."  # what the paths above are relative to: the folder of this checkpoint
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        def here(path: str) -> str:
            # its files lie in its folder: a stored path is read as the file of its name there (a crafted
            # "../../x" would make Lightning replace or delete a file outside the run when a better epoch comes)
            name = Path(path).name if path else ""
            return "" if name in ("", ".", "..") else str(Path(self.dirpath) / name)

        state = {**state_dict, "dirpath": self.dirpath}  # Lightning restores everything only for its own dirpath
        state.update({key: here(state_dict.get(key) or "") for key in self._PATHS})
        state["best_k_models"] = {here(path): score for path, score in (state_dict.get("best_k_models") or {}).items()}
        super().load_state_dict(state)


def _rng_states() -> dict:
    """The global random states as tensors and plain data (what ``weights_only`` loading accepts)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    version, state, py_gauss = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "torch.cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "gauss": float(gauss),
        },
        "python": {"version": version, "state": list(state), "gauss": py_gauss},
    }


def _set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    if states["torch.cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["torch.cuda"])
    n = states["numpy"]
    np.random.set_state((n["kind"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    p = states["python"]
    random.setstate((p["version"], tuple(p["state"]), p["gauss"]))


class RNGStates(L.Callback):
    """Saves the global random states in every checkpoint and restores them when a run resumes from one.

    A checkpoint is written at the end of an epoch, and nothing draws random numbers between that moment and the
    next epoch's first batch, so restoring the states as the checkpoint is loaded puts a resumed run exactly where
    the uninterrupted one was (Poisson input spikes, dropout, negative sampling, worker seeds)."""

    def state_dict(self) -> dict:
        return _rng_states()

    def load_state_dict(self, state_dict: dict) -> None:
        _set_rng_states(state_dict)
