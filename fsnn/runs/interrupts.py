"""How every fsnn command stops on a signal that ends a process (a scheduler's SIGTERM, Ctrl-C's SIGINT, a closed
terminal's SIGHUP, a scheduler's warning SIGUSR1 or SIGUSR2 that nothing else handles): at once, with one line saying what it wrote and what it did not, and exit status 128 + the
signal's number (143, 130, 129), as a shell reports a process the signal killed, so that a scheduler never sees a
stopped command as a success. Files are written whole or not at all (:func:`fsnn.atomic.write_atomic`), so what a
command had not finished is what it had been before.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from fsnn.scheduler_signals import SCHEDULER_WARNINGS

#: the signals that stop a command: it says what it wrote and exits with 128 + the signal's number
INTERRUPTING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Interrupted(BaseException):
    """A signal of :data:`INTERRUPTING` arrived: the command stops where it is (a ``BaseException``, as
    ``KeyboardInterrupt``, so that nothing on the way catches it as an error)."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


@contextlib.contextmanager
def interruptible():
    """The signals of :data:`INTERRUPTING`, and those of :data:`~fsnn.scheduler_signals.SCHEDULER_WARNINGS` that no
    handler takes yet (submitit's SIGUSR2 handler checkpoints and requeues the job, and stays), raise
    :class:`Interrupted` in the block (once: a second signal while the command stops is ignored); a signal the
    process ignores (``nohup`` ignores SIGHUP, a shell's background job
    SIGINT) stays ignored. Lightning's own SIGTERM handler, set while it fits or tests, calls this one after its own
    (which stops DDP's other processes). In a thread other than the main one, signals cannot be handled: the block
    runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in (*INTERRUPTING, *SCHEDULER_WARNINGS)}
    stopping = []

    def interrupt(signum, frame):
        if not stopping:  # once: what is written while the command stops (metrics.json) must not be cut short
            stopping.append(signum)
            raise Interrupted(signum)

    for signum, handler in previous.items():
        if handler is not signal.SIG_IGN and (signum in INTERRUPTING or handler is signal.SIG_DFL):
            signal.signal(signum, interrupt)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def submitit_requeue() -> Callable[[int, object], None] | None:
    """The handler submitit set for its preemption signal (one of
    :data:`~fsnn.scheduler_signals.SCHEDULER_WARNINGS`) in a job it runs: it checkpoints the job's submission,
    requeues the job and exits; ``None`` outside a submitit job. A SIGTERM, SLURM's
    preemption, is handed to it once the run has stopped (:func:`fsnn.suite.run.train`), so that a preempted job is
    requeued and resumes, where submitit alone would ignore the SIGTERM until SLURM kills the job."""
    module = sys.modules.get("submitit.core.job_environment")
    if module is None:
        return None
    for signum in SCHEDULER_WARNINGS:
        handler = signal.getsignal(signum)
        if isinstance(getattr(handler, "__self__", None), module.SignalHandler):
            return handler
    return None


def _files(folders: Iterable[Path]) -> dict[Path, int]:
    return {
        path: path.stat().st_mtime_ns
        for folder in folders
        if Path(folder).is_dir()
        for path in Path(folder).rglob("*")
        if path.is_file()
    }


@contextlib.contextmanager
def exit_on_interrupt(command: str, folders: Iterable[str | Path], expected: Iterable[str] = ()):
    """The block of ``command`` (its name as a person types it), which writes into ``folders``: on a signal of
    :data:`INTERRUPTING`, one line on stderr naming the files it wrote there (new or changed since it started) and,
    of the file names ``expected``, those it did not, then ``SystemExit(128 + signum)``."""
    folders = [Path(folder) for folder in folders]
    before = _files(folders)
    try:
        with interruptible():
            yield
    except Interrupted as stop:
        written = sorted(
            str(path)
            for path, mtime in _files(folders).items()
            if before.get(path) != mtime and not path.name.startswith(".")
        )
        missing = [name for name in expected if not any(Path(path).name == name for path in written)]
        where = ", ".join(map(str, folders))
        print(
            f"fsnn: {command} {stop}: wrote {', '.join(written) if written else f'nothing in {where}'}"
            + (f"; not written: {', '.join(missing)}" if missing else "")
            + "; every other file is as it was (each file is written whole); rerunning the command writes the rest",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(128 + stop.signum) from None
