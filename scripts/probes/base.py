"""The probe's machinery: running a command of the checkout in a fresh folder, classifying what it printed, recording
the outcome, and the runs and data the cases share."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from probes.common import BAD_VALUES, ERROR_LINE, FABRICATE, GRAPH, MODULES, OUTCOMES, TINY, read_json
from probes.snippets import run_snippets


class ProbeBase:
    """The probe's machinery, which every category's cases use through ``self``."""

    def __init__(
        self,
        root: Path,
        work: Path,
        data: Path,
        values: list[tuple[str, str]] = BAD_VALUES,
        journal: Path | None = None,
        fast: bool = False,
    ):
        self.root, self.work, self.data, self.values, self.journal = root, work, data, values, journal
        self.fast = fast  # only the cases that train nothing (FAST)
        self.rows: list[dict] = []
        self.count = 0

    def env(self, **extra) -> dict:
        return {
            **os.environ,
            "PYTHONPATH": str(self.root),
            "WANDB_MODE": "disabled",
            "FSNN_DATA_VERIFY": "0",
            "FSNN_DATA_DOWNLOAD": "0",
            "HYDRA_FULL_ERROR": "0",
            **extra,
        }

    def folder(self, name: str) -> Path:
        self.count += 1
        # only characters a Hydra override value takes unquoted (the path goes into run_dir=... and paths.*=...)
        path = self.work / f"{self.count:03d}-{re.sub(r'[^A-Za-z0-9._+-]', '_', name)[:60]}"
        path.mkdir(parents=True)
        return path

    def run(
        self,
        script: str,
        *args: str,
        cwd: Path,
        timeout: int = 300,
        env: dict | None = None,
        umask: int | None = None,
        file_size: int | None = None,
        read_only: Path | None = None,
    ) -> tuple[int | None, str]:
        """``(exit status or None on timeout, stdout + stderr)`` of ``script`` (a file of the checkout, or one of
        :data:`MODULES`) under ``umask``, with files limited to ``file_size`` bytes (a disk that fills up: a write
        past it fails with EFBIG), or with the folder ``read_only`` mounted read-only (in a mount namespace of its
        own: root passes every permission check)."""
        command = [
            sys.executable,
            *(["-m", MODULES[script]] if script in MODULES else [str(self.root / script)]),
            *args,
        ]
        if read_only is not None:
            remount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
            command = ["unshare", "-rm", "sh", "-c", remount, str(read_only), *command]

        def limits() -> None:
            if umask is not None:
                os.umask(umask)
            if file_size is not None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

        try:
            proc = subprocess.run(
                command,
                cwd=cwd,
                env=self.env(**(env or {})),
                capture_output=True,
                text=True,
                timeout=timeout,
                preexec_fn=limits,
            )
        except subprocess.TimeoutExpired as expired:
            out = (expired.stdout or b"") + (expired.stderr or b"")
            return None, out.decode(errors="replace") if isinstance(out, bytes) else out
        return proc.returncode, proc.stdout + proc.stderr

    def train(self, cwd: Path, *args: str, **kwargs):
        return self.run("train.py", *args, f"paths.data_dir={self.data}", cwd=cwd, **kwargs)

    @staticmethod
    def classify_error(rc: int | None, out: str, name: str) -> str:
        """The outcome of a command that should have refused its input with one line naming ``name``."""
        if "Traceback (most recent call last)" in out or '\n  File "' in out:
            return "traceback"
        if rc == 0 or rc is None:
            return "silent"
        lines = [line for line in out.splitlines() if ERROR_LINE.match(line)]
        return "clear" if lines and all(name in line for line in lines[:1]) else "unclear"

    def record(
        self, category: str, case: str, outcome: str, lost: bool = False, note: str = "", security: bool = False
    ) -> None:
        """``security``: a file written, replaced or removed outside the folder it belongs in."""
        assert outcome in OUTCOMES, outcome
        row = {"category": category, "case": case, "outcome": outcome, "lost": lost, "note": note, "security": security}
        self.rows.append(row)
        if self.journal is not None:  # a probe stopped part-way keeps what it recorded
            with self.journal.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
        print(
            f"  {category:12s} {case:58s} {outcome:9s}{' LOST' if lost else ''}{' SECURITY' if security else ''} "
            f"{note}",
            flush=True,
        )

    def snippets(self, category: str, cases: list[tuple[str, str, str]]) -> None:
        """Record each case ``(case, code, word)``: Python code run by :func:`run_snippets` in a fresh process of its
        own (nothing carries over), with the probe's environment."""
        for case, code, word in cases:
            ((outcome, note),) = run_snippets(self.root, [(code, word)], env=self.env())
            self.record(category, case, outcome, note=note[:90])

    @staticmethod
    def run_dir(cwd: Path, task: str = "train") -> Path:
        found = sorted((cwd / "runs" / task).glob("*/metrics.json"))
        if len(found) != 1:
            raise RuntimeError(f"expected one run under {cwd}, found {found}")
        return found[0].parent

    @staticmethod
    def metrics(run: Path) -> dict | None:
        return read_json(run / "metrics.json")

    def complete_run(self, name: str, *args: str) -> Path:
        """A finished tiny run to damage, trained once and copied for each case."""
        cwd = self.folder(name)
        rc, out = self.train(cwd, *TINY, *args)
        if rc != 0:
            raise RuntimeError(f"the reference run {args} failed:\n{out[-3000:]}")
        return self.run_dir(cwd)

    def copy_run(self, run: Path, name: str) -> tuple[Path, Path]:
        cwd = self.folder(name)
        target = cwd / run.relative_to(run.parents[2])
        shutil.copytree(run, target)
        return cwd, target

    @staticmethod
    def run_dir_matching(cwd: Path, text: str, task: str = "train") -> Path:
        """The first run folder under ``cwd`` whose name contains ``text``."""
        found = [p.parent for p in sorted((cwd / "runs" / task).glob("*/metrics.json")) if text in p.parent.name]
        return found[0] if found else cwd / "missing"

    @staticmethod
    def behaviour(rc: int | None, out: str) -> str:
        """The outcome of a command that should have done the safe thing and did not."""
        return "traceback" if "Traceback (most recent call last)" in out else "silent" if rc == 0 else "unclear"

    @staticmethod
    def first_error(out: str) -> str:
        return next((line for line in out.splitlines() if ERROR_LINE.match(line)), "")

    def private_data(self, cwd: Path, *folders: str, part: str = "raw") -> Path:
        """A data folder of the case's own with the ``part`` of ``folders`` (fixtures): their raw files (a graph's),
        or ``""``, all of them."""
        data = cwd / "data"
        for folder in folders:
            shutil.copytree(self.data / folder / part, data / folder / part)
        return data

    def fabricated_run(self, cwd: Path, data: Path, shape: str = "same") -> Path:
        """A run folder of ``GRAPH`` on ``data`` with its config and an untrained ``best.ckpt`` written by the
        checkout's own functions (``shape="other"``: its first matrix saved one of another width, as a model built
        by other code or data would have it)."""
        run = cwd / "results" / "train" / "fabricated"
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                FABRICATE,
                str(self.root / "conf"),
                str(run),
                shape,
                *GRAPH,
                f"paths.data_dir={data}",
            ],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"fabricating a run failed:\n{proc.stderr[-3000:]}")
        return run
