"""A run stopped and resumed, and every command on a signal (categories ``lifecycle``, ``signals``, ``handlers``)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from probes.base import ProbeBase
from probes.common import HERE, HOLD, TINY, children, read_json


class LifecycleCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def lifecycle(self) -> None:
        """A run's life beyond one process: a moved folder, ``force=true`` twice, SIGTERM and SIGINT, tools on a
        folder in training, a folder or a full disk where a run writes a file."""
        # interrupted before its test phase, moved, the original place gone: completes from its own files?
        old = self.folder("travel-old")
        self.patched(old, "before-test", *TINY)
        new = self.folder("travel-new")
        os.replace(old / "runs", new / "runs")
        rc, out = self.train(new, *TINY)
        m = self.metrics(self.run_dir(new))
        done = rc == 0 and m is not None and m.get("status") == "complete"
        self.record(
            "lifecycle",
            "interrupted before its test, moved, rerun",
            "clear" if done else self.behaviour(rc, out),
            note="" if done else self.first_error(out),
        )
        # force=true twice: is the first finished result still somewhere in the folder?
        cwd = self.folder("force-twice")
        self.train(cwd, *TINY)
        run = self.run_dir(cwd)
        first = (run / "metrics.json").read_bytes()
        rcs = [self.train(cwd, *TINY, "force=true")[0] for _ in range(2)]
        kept = [p.relative_to(run).as_posix() for p in run.rglob("*.json") if p.read_bytes() == first]
        self.record(
            "lifecycle",
            "force=true twice keeps the first result",
            "clear" if kept and rcs == [0, 0] else "silent",
            lost=not kept,
            note=f"kept as {kept}" if kept else "the first result is gone",
        )
        for name in ("SIGTERM", "SIGINT"):
            self.stopped_and_resumed("lifecycle", f"{name} after the first epoch, then rerun", name)
        # tools on a folder whose run holds the lock
        ref = self.complete_run("lock-ref")
        for label, args in (
            ("evaluate.py", ["study=none"]),
            ("evaluate.py study=energy", ["study=energy"]),
            ("evaluate.py allow_unfinished=true", ["study=energy", "allow_unfinished=true"]),
        ):
            cwd, run = self.copy_run(ref, label)
            holder = subprocess.Popen(
                [sys.executable, "-c", HOLD, str(run)], stdout=subprocess.PIPE, text=True, env=self.env()
            )
            try:
                holder.stdout.readline()
                rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", *args, cwd=cwd)
            finally:
                holder.kill()
                holder.wait()
            written = [name for name in ("eval.json", "energy.json") if (run / name).exists()]
            if "allow_unfinished=true" in args:  # evaluated, and its output says the run was unfinished?
                unfinished = rc == 0 and written and json.loads((run / written[0]).read_text()).get("run_unfinished")
                outcome = "clear" if unfinished else self.behaviour(rc, out)
            else:
                outcome = "silent" if rc == 0 or written else self.classify_error(rc, out, f"pid {holder.pid}")
            self.record(
                "lifecycle", f"{label} on a folder in training", outcome, note=f"wrote {written}" if written else ""
            )
        # a folder where metrics.json belongs
        cwd, run = self.copy_run(ref, "metrics-folder")
        (run / "metrics.json").unlink()
        (run / "metrics.json").mkdir()
        rc, out = self.train(cwd, *TINY)
        self.record(
            "lifecycle", "metrics.json is a folder, then train.py", self.classify_error(rc, out, "metrics.json")
        )
        # the disk fills up while a checkpoint or the final metrics.json is written
        for name in ("last.ckpt", "metrics.json"):
            cwd = self.folder(f"disk-full-{name}")
            rc, out = self.patched(cwd, f"disk-full:{name}", *TINY)
            partial = [p.name for p in (cwd / "runs").rglob(".*.tmp-*")]
            outcome = self.classify_error(rc, out, name)
            outcome = "unclear" if outcome == "clear" and "free" not in self.first_error(out) else outcome
            self.record(
                "lifecycle",
                f"disk full while writing {name}",
                "silent" if partial else outcome,
                note=f"partial files left: {partial}" if partial else "",
            )

    def patched(self, cwd: Path, when: str, *args: str) -> tuple[int | None, str]:
        """``train.py`` of ``--root`` interrupted by the tests' ``interrupt.py`` at ``when`` (e.g. ``before-test``,
        ``disk-full:last.ckpt``), which patches fsnn's and Lightning's functions that every checkout has."""
        command = [sys.executable, str(HERE / "tests" / "interrupt.py"), when, *args, f"paths.data_dir={self.data}"]
        proc = subprocess.run(command, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def stopped_and_resumed(self, category: str, case: str, name: str, *args: str, to: str = "run") -> None:
        """A signal after the first epoch (:meth:`signalled`): the run is interrupted (not failed), exits 128 + n,
        and its rerun resumes it to the end."""
        cwd = self.folder(case)
        rc, out = self.signalled(cwd, getattr(signal, name), *TINY, "trainer.max_epochs=3", *args, to=to)
        m = self.metrics(self.run_dir(cwd)) or {}
        again, _ = self.train(cwd, *TINY, "trainer.max_epochs=3", *args)
        resumed = (self.metrics(self.run_dir(cwd)) or {}).get("status") == "complete"
        told = rc == 128 + getattr(signal, name) and m.get("status") == "interrupted"
        self.record(
            category,
            case,
            "clear" if told and resumed else self.behaviour(rc, out),
            note=f"exit {rc}, status {m.get('status')}, rerun exit {again}",
        )

    def signalled(self, cwd: Path, signum: int, *args: str, to: str = "run") -> tuple[int | None, str]:
        """``train.py`` sent ``signum`` once its first ``last.ckpt`` is written: ``to`` the ``run``'s process, its data
        loader ``workers`` (its child processes), or ``all`` of them, workers first (as a scheduler's ``--signal``
        reaches every process of a job)."""
        proc = subprocess.Popen(
            [sys.executable, str(self.root / "train.py"), *args, f"paths.data_dir={self.data}"],
            cwd=cwd,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not list((cwd / "runs").rglob("last.ckpt")):
            time.sleep(0.05)
        workers = children(proc.pid) if to in ("workers", "all") else []
        for pid in workers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
        if to in ("run", "all"):
            proc.send_signal(signum)
        out = proc.communicate(timeout=600)[0]
        if to != "run" and not workers:
            out += "\n(probe: no data loader worker was alive to signal)"
        return proc.returncode, out

    def signals(self) -> None:
        """Every command stopped by a signal exits 128 + n with one line saying what it wrote."""
        ref = self.complete_run("signal-ref")
        for name, study in (("SIGTERM", "study=none"), ("SIGINT", "study=energy"), ("SIGTERM", "robustness=events")):
            self.evaluate_signalled("signals", ref, name, study)
        for command, name in (("make_tables", "SIGTERM"), ("report", "SIGINT")):
            self.report_signalled("signals", command, name)
        # a joblib sweep: its loky workers outlive it unless it stops them
        cwd = self.folder("joblib-sigterm")
        log = cwd / "console.txt"  # not a pipe: workers left running would hold it open
        with log.open("w") as console:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    str(self.root / "train.py"),
                    "-m",
                    "launcher=joblib",
                    "seed=0,1",
                    *TINY,
                    "trainer.max_epochs=50",
                    f"paths.data_dir={self.data}",
                ],
                cwd=cwd,
                env=self.env(),
                stdout=console,
                stderr=subprocess.STDOUT,
            )
            deadline = time.time() + 600
            while time.time() < deadline and proc.poll() is None and len(list(cwd.rglob("last.ckpt"))) < 2:
                time.sleep(0.2)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=300)
        stamps = {p: p.stat().st_mtime_ns for p in cwd.rglob("last.ckpt")}
        time.sleep(20)
        out = log.read_text()
        trained_on = [p.parent.parent.name for p in cwd.rglob("last.ckpt") if p.stat().st_mtime_ns != stamps.get(p)]
        for link in Path("/proc").glob("[0-9]*/cwd"):  # workers a checkout left running: the processes in this case
            with contextlib.suppress(OSError):
                if Path(os.readlink(link)) == cwd:
                    os.kill(int(link.parent.name), signal.SIGKILL)
        told = proc.returncode == 143 and "fsnn: sweep interrupted by SIGTERM" in out
        self.record(
            "signals",
            "launcher=joblib sweep on SIGTERM",
            "silent" if trained_on else "clear" if told else self.behaviour(proc.returncode, out),
            note=f"exit {proc.returncode}; workers trained on: {len(trained_on)}",
        )

    def evaluate_signalled(self, category: str, ref: Path, name: str, study: str) -> None:
        """``evaluate.py`` ``study`` on a copy of the run ``ref``, sent the signal ``name`` mid-work."""
        cwd, run = self.copy_run(ref, f"evaluate-{name}-{study}")
        rc, out = self.interrupted(cwd, f"evaluate:{name}", f"run_dir={run}", study, f"paths.data_dir={self.data}")
        self.record(category, f"evaluate.py {study} on {name}", self.told(rc, out, name))

    def report_signalled(self, category: str, command: str, name: str) -> None:
        """``fsnn-report`` ``command`` (``make_tables``, ``report``) on an empty results tree, sent ``name``."""
        cwd = self.folder(f"{command}-{name}")
        (cwd / "results").mkdir()
        rc, out = self.interrupted(cwd, f"{command}:{name}", "--results", "results", "--out", "out")
        self.record(category, f"{command} on {name}", self.told(rc, out, name))

    def interrupted(self, cwd: Path, when: str, *args: str) -> tuple[int | None, str]:
        """A command of ``--root`` sent a signal mid-work by the tests' ``interrupt.py`` (``evaluate:SIGTERM``...)."""
        proc = subprocess.run(
            [sys.executable, str(HERE / "tests" / "interrupt.py"), when, *args],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        return proc.returncode, proc.stdout + proc.stderr

    @staticmethod
    def told(rc: int | None, out: str, name: str) -> str:
        """The outcome of a command stopped by the signal ``name``: exit 128 + n with one line saying what it
        wrote (``clear``), a success (``silent``) or a traceback."""
        if "Traceback (most recent call last)" in out:
            return "traceback"
        if rc != 128 + getattr(signal, name):
            return "silent" if rc in (0, None) else "unclear"
        return "clear" if any(line.startswith("fsnn: ") and "wrote" in line for line in out.splitlines()) else "unclear"

    def handlers(self) -> None:
        """Signals outside the three every command handles: a scheduler's SIGUSR1 / SIGUSR2 (SLURM's ``--signal``
        reaches every process of a job, data loader workers included) stop a run as SIGTERM does, or leave it alone
        where they reach only its workers; a refused resume leaves the interrupted run's record as it was."""
        for name in ("SIGUSR1", "SIGUSR2"):
            self.stopped_and_resumed("handlers", f"{name} after the first epoch, then rerun", name)
        workers = "dataset.num_workers=1"
        self.stopped_and_resumed(
            "handlers", "SIGUSR2 to the run and its loader workers, then rerun", "SIGUSR2", workers, to="all"
        )
        cwd = self.folder("SIGUSR2-workers")
        rc, out = self.signalled(cwd, signal.SIGUSR2, *TINY, "trainer.max_epochs=3", workers, to="workers")
        m = self.metrics(self.run_dir(cwd)) or {}
        went_on = rc == 0 and m.get("status") == "complete" and "no data loader worker" not in out
        self.record(
            "handlers",
            "SIGUSR2 to the loader workers alone: the run goes on",
            "clear" if went_on else self.behaviour(rc, out),
            note=f"exit {rc}, status {m.get('status')}"
            + (", no worker was signalled" if "no data loader" in out else ""),
        )
        # an interrupted run rerun with another result config: refused, its record still says interrupted
        cwd = self.folder("refused-resume")
        self.signalled(cwd, signal.SIGTERM, *TINY, "trainer.max_epochs=3", "run_name=mine")
        record = self.run_dir(cwd) / "metrics.json"
        interrupted = record.read_bytes()
        rc, out = self.train(cwd, *TINY, "trainer.max_epochs=4", "run_name=mine")
        kept = record.read_bytes() == interrupted
        again, _ = self.train(cwd, *TINY, "trainer.max_epochs=3", "run_name=mine")
        resumed = (read_json(record) or {}).get("status") == "complete"
        self.record(
            "handlers",
            "a refused resume, then the run's own command",
            self.classify_error(rc, out, "checkpoint") if kept and resumed else "silent",
            note=f"record {'kept' if kept else 'rewritten'}, own command {'resumed' if resumed else f'exit {again}'}",
        )
        self.report_signalled("handlers", "make_tables", "SIGUSR1")
        self.evaluate_signalled("handlers", self.complete_run("handlers-ref"), "SIGUSR2", "study=none")
        print("  (a submitit job's requeue on SIGUSR2 not probed: it needs a scheduler)", flush=True)
