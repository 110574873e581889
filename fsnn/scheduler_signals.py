"""The signals a cluster scheduler sends ahead of a time limit, and a data loader worker that leaves them to the
main process: the data modules set the worker, the commands (:mod:`fsnn.runs.interrupts`) handle the signals."""

from __future__ import annotations

import signal

#: signals a scheduler sends ahead of a time limit (SLURM's ``--signal``: every process of the job gets it), whose
#: default action ends a process without a word
SCHEDULER_WARNINGS = tuple(getattr(signal, name) for name in ("SIGUSR1", "SIGUSR2") if hasattr(signal, name))


def leave_to_the_main_process(worker_id: int = 0) -> None:
    """A data loader worker's ``worker_init_fn``: the signals of :data:`SCHEDULER_WARNINGS`, which a scheduler sends
    to every process of a job, are the main process's to handle (it stops the run, or submitit requeues it); by their
    default action the worker would die first and the run fail with it."""
    for signum in SCHEDULER_WARNINGS:
        signal.signal(signum, signal.SIG_IGN)
