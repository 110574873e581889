"""Run this checkout's ``train.py`` in this process and kill it with SIGKILL at a chosen point, as a crash, an
out-of-memory kill or a cluster's time limit would: ``python tests/interrupt.py <when> <train.py overrides...>``.

``when``: ``mid-epoch`` (the second epoch's second training batch), ``between-epochs`` (just after the first epoch's
``last.ckpt`` is written) or ``while-writing`` (halfway through writing the second epoch's ``last.ckpt``).
"""

from __future__ import annotations

import io
import os
import runpy
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def main(when: str) -> None:
    import fsnn.checkpoint as checkpoint
    from fsnn.training import ClassifierModule

    if when == "mid-epoch":
        step = ClassifierModule.training_step

        def training_step(self, batch, batch_idx):
            if self.current_epoch == 1 and batch_idx == 1:
                die()
            return step(self, batch, batch_idx)

        ClassifierModule.training_step = training_step
    elif when == "between-epochs":
        save = checkpoint.save_checkpoint

        def save_checkpoint(state, path, config):
            save(state, path, config)
            if Path(path).name == "last.ckpt" and state["epoch"] == 0:
                die()

        checkpoint.save_checkpoint = save_checkpoint
    elif when == "while-writing":
        write = checkpoint.write_atomic

        def write_atomic(path, fill, **kwargs):
            if Path(path).name != "last.ckpt" or not Path(path).exists():
                return write(path, fill, **kwargs)
            buffer = io.BytesIO()
            fill(buffer)

            def half(handle):
                handle.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
                handle.flush()
                die()

            return write(path, half, **kwargs)

        checkpoint.write_atomic = write_atomic
    else:
        raise SystemExit(f"unknown interruption {when!r}")
    runpy.run_path(str(ROOT / "train.py"), run_name="__main__")


if __name__ == "__main__":
    when = sys.argv[1]
    sys.argv = [str(ROOT / "train.py"), *sys.argv[2:]]
    main(when)
