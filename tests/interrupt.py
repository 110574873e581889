"""Run the ``train.py`` of the fsnn checkout that ``import fsnn`` finds (this one, or the one ``PYTHONPATH`` names) in
this process and interrupt it at a chosen point, as a crash, an out-of-memory kill, a scheduler or a full disk
would: ``python tests/interrupt.py <when> <train.py overrides...>``.

``when``: SIGKILL at ``mid-epoch`` (the second epoch's second training batch), ``between-epochs`` (just after the
first epoch's ``last.ckpt`` is written), ``while-writing`` (halfway through writing the second epoch's
``last.ckpt``) or ``before-test`` (training done, before the test phase); ``sigterm`` / ``sigint`` / ``sigusr1`` /
``sigusr2`` (the signal, just after the first epoch's ``last.ckpt`` is written); ``disk-full:<file name>`` (the disk
fills up while that file, e.g. ``last.ckpt`` or ``metrics.json``, is written the second time: the write fails with
ENOSPC).

The other commands, sent a signal (``SIGTERM``, ``SIGINT``, ``SIGHUP``) in the middle of their work:
``evaluate:<signal> <evaluate.py overrides...>`` (as its first test pass starts, or the energy study's
measurement), ``make_tables:<signal> <its
arguments>`` (after it wrote its first table file), ``report:<signal> <its arguments>`` (before the page is written).
"""

from __future__ import annotations

import errno
import importlib.util
import io
import os
import runpy
import signal
import sys
from pathlib import Path

ROOT = Path(importlib.util.find_spec("fsnn").origin).parents[1]


class FillingUp(io.FileIO):
    """A file on a disk that is full after its first kilobytes: a write past them fails with ENOSPC."""

    def write(self, data):
        if self.tell() + len(data) > 4096:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def send(name: str) -> None:
    os.kill(os.getpid(), getattr(signal, name))


def other_command(command: str, name: str) -> str:
    """Patch ``command`` to be sent the signal ``name`` mid-work; returns the script to run."""
    if command == "evaluate":  # as its first test pass starts, or the energy study measures its batch
        import lightning

        import fsnn.suite.studies as studies

        def signalled(function):
            def signalled_function(*args, **kwargs):
                send(name)
                return function(*args, **kwargs)

            return signalled_function

        lightning.Trainer.test = signalled(lightning.Trainer.test)
        studies.energy_report = signalled(studies.energy_report)
        return "evaluate.py"
    if command == "make_tables":
        import fsnn.report.tables as tables

        write = tables.write_text_atomic

        def write_then_signal(path, text):
            written = write(path, text)
            send(name)
            return written

        tables.write_text_atomic = write_then_signal
        return "tables"
    if command == "report":
        import fsnn.report.page as report

        render = report.render
        report.render = lambda *args, **kwargs: (send(name), render(*args, **kwargs))[1]
        return "page"
    raise SystemExit(f"unknown command {command!r}")


def run_other_command(command: str, name: str) -> None:
    """Run ``command`` (patched by :func:`other_command`) as its user types it."""
    script = other_command(command, name)
    if script == "evaluate.py":
        sys.argv[0] = str(ROOT / script)
        runpy.run_path(str(ROOT / script), run_name="__main__")
    else:  # fsnn-report tables|page
        sys.argv[:1] = ["fsnn-report", script]
        runpy.run_module("fsnn.report", run_name="__main__")


def main(when: str) -> None:
    command, _, name = when.partition(":")
    if command in ("evaluate", "make_tables", "report"):
        run_other_command(command, name)
        return
    import fsnn.suite.checkpoint as checkpoint
    from fsnn.suite.training import ClassifierModule

    if when == "mid-epoch":
        step = ClassifierModule.training_step

        def training_step(self, batch, batch_idx):
            if self.current_epoch == 1 and batch_idx == 1:
                die()
            return step(self, batch, batch_idx)

        ClassifierModule.training_step = training_step
    elif when in ("between-epochs", "sigterm", "sigint", "sigusr1", "sigusr2"):
        save = checkpoint.save_checkpoint
        stop = die if when == "between-epochs" else lambda: os.kill(os.getpid(), getattr(signal, when.upper()))

        def save_checkpoint(state, path, config):
            save(state, path, config)
            if Path(path).name == "last.ckpt" and state["epoch"] == 0:
                stop()

        checkpoint.save_checkpoint = save_checkpoint
    elif when == "before-test":
        import lightning

        lightning.Trainer.test = lambda *args, **kwargs: die()
    elif when.startswith("disk-full:"):
        import fsnn.atomic as files

        name = when.split(":", 1)[1]

        def open_filling(path, mode="r", *args, **kwargs):  # fsnn's atomic writer fills .<name>.tmp-..., then renames
            if f".{name}.tmp-" in str(path) and Path(path).with_name(name).exists():
                return io.BufferedWriter(FillingUp(path, "wb"))
            return open(path, mode, *args, **kwargs)

        files.open = open_filling
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
