"""The library used from Python, variables set to nothing, and keys no config has (categories ``library``,
``environment``, ``schema``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from probes.base import ProbeBase
from probes.common import GRAPH, MANY_OVERRIDES, SCHEMA_VALUES, TINY


class LibraryCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def library(self) -> None:
        """The library's and training's guarded cases: learned parameters, engines' autograd,
        records read with impossible metrics."""
        for label, args in (
            (
                "neuron.learn_tau=true neuron.tau=0.9 tau_lr_scale=1000",
                ["neuron.learn_tau=true", "neuron.tau=0.9", "tau_lr_scale=1000"],
            ),
            (
                "neuron.engine=soe neuron.learn_alpha=true dataset.T=4",
                ["neuron.engine=soe", "neuron.learn_alpha=true", "dataset.T=4"],
            ),
        ):
            cwd = self.folder(label)
            rc, out = self.train(cwd, *TINY, *args)
            self.record(
                "library",
                label,
                "clear" if rc == 0 else self.behaviour(rc, out) if rc != 2 else "clear",
                note=self.first_error(out),
            )
        for label, code, word in (
            (
                "checkpoint(FractionalLIF(), x, use_reentrant=False)",
                "from torch.utils.checkpoint import checkpoint\nx = torch.randn(16, 2, 3, requires_grad=True)\n"
                "checkpoint(FractionalLIF(learn_alpha=True), x, use_reentrant=False).sum().backward()\n"
                "assert x.grad is not None",
                "checkpoint",
            ),
            ("torch.vmap(FractionalLIF())", "torch.vmap(FractionalLIF())(torch.randn(3, 16, 2, 4))", "vmap"),
            ("torch.jit.script(FractionalLIF())", "torch.jit.script(FractionalLIF())", "jit"),
        ):
            cwd = self.folder(label)
            script = (
                "import sys, torch\nfrom fsnn import FractionalLIF\ntry:\n"
                + "".join(f"    {line}\n" for line in code.splitlines())
                + "except (ValueError, RuntimeError, TypeError) as error:\n"
                "    print(f'fsnn: error: {error}'.splitlines()[0]); sys.exit(2)\n"
            )
            proc = subprocess.run(
                [sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300, env=self.env()
            )
            out = proc.stdout + proc.stderr
            outcome = (
                "clear"
                if proc.returncode == 0
                else "traceback"
                if "Traceback" in out
                else self.classify_error(proc.returncode, out, word)
            )
            self.record("library", label, outcome, note=self.first_error(out)[:90])
        cwd = self.folder("impossible-metric")
        run = cwd / "results" / "table2_node_classification" / "run"
        run.mkdir(parents=True)
        (run / "metrics.json").write_text(
            json.dumps(
                {
                    "status": "complete",
                    "metric": "acc",
                    "metric_unit": "fraction",
                    "test_acc": 1e300,
                    "val_acc_best": -5,
                    "recipe": "matched",
                    "seed": 0,
                    "epochs": 1,
                    "task": "table2_node_classification",
                    "config": {"dataset": {"name": "cora"}, "backbone": {"name": "sgcn"}, "neuron": {"name": "flif"}},
                }
            )
        )
        rc, out = self.run("fsnn-report", "tables", "--results", str(cwd / "results"), "--out", str(cwd / "t"), cwd=cwd)
        counted = "1 complete" in out
        self.record(
            "library",
            "make_tables: test_acc 1e300, val_acc_best -5",
            "traceback"
            if "Traceback" in out
            else "silent"
            if counted
            else "clear"
            if str(run / "metrics.json") in out and "test_acc" in out
            else "unclear",
        )

    def environment(self) -> None:
        """A variable set to nothing (``FSNN_RESULTS=``, ``FSNN_DATA=``) counts as unset; the run fails at its data
        (an empty data folder), once Hydra has made its folder, so the case shows where the folder went."""
        task = f"fsnn-probe-{os.getpid()}"
        cwd = self.folder("FSNN_RESULTS-empty")
        (cwd / "empty").mkdir()
        rc, out = self.run(
            "train.py",
            *GRAPH,
            f"task_name={task}",
            f"paths.data_dir={cwd / 'empty'}",
            cwd=cwd,
            env={"FSNN_RESULTS": ""},
        )
        at_root = Path("/") / task
        escaped = at_root.exists()
        if escaped:
            shutil.rmtree(at_root)  # the probe's own folder at the file system's root
        self.record(
            "environment",
            "FSNN_RESULTS= (set, empty)",
            "traceback"
            if "Traceback" in out
            else "silent"
            if escaped
            else "clear"
            if (cwd / "runs" / task).is_dir()
            else self.behaviour(rc, out),
            security=escaped,
            note=f"the run folder was made in {at_root}" if escaped else "",
        )
        cwd = self.folder("FSNN_DATA-empty")
        rc, out = self.run("train.py", *GRAPH, cwd=cwd, env={"FSNN_DATA": ""})
        looked = str(cwd / "data" / "Cora")
        self.record(
            "environment",
            "FSNN_DATA= (set, empty)",
            "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 2 and looked in out
            else "unclear"
            if rc
            else "silent",
            note="" if looked in out else "it did not look in ./data",
        )

    def schema(self) -> None:
        """The config surface (:data:`SCHEMA_VALUES`, and a key no eval config has): refused before any folder is
        made, in one line naming the key."""
        for overrides, key in SCHEMA_VALUES:
            cwd = self.folder(overrides)
            flags = [arg for arg in overrides.split() if arg.startswith("-")]  # -m goes before the overrides
            rest = [arg for arg in overrides.split() if arg not in flags]
            rc, out = self.train(cwd, *flags, *TINY, *rest, timeout=240)
            self.refused_before_a_folder("schema", overrides, cwd, rc, out, key)
        cwd = self.folder("schema-many-overrides")
        start = time.perf_counter()
        rc, out = self.train(cwd, *TINY, *["neuron.alpha=0.5"] * MANY_OVERRIDES, timeout=240)
        took = time.perf_counter() - start
        self.record(
            "schema",
            f"{MANY_OVERRIDES} overrides (neuron.alpha=0.5 repeated), then a tiny run",
            "clear" if rc == 0 else "silent" if rc is None else self.behaviour(rc, out),
            note=f"{'timed out after' if rc is None else 'ended in'} {took:.0f} s",
        )
        cwd = self.folder("schema-evaluate")
        run = self.fabricated_run(cwd, data := self.private_data(cwd, "Cora"))
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", "+studdy=energy", cwd=cwd)
        made = (run / "eval").exists()
        self.record(
            "schema",
            "evaluate.py +studdy=energy",
            "unclear" if made and rc == 2 else self.classify_error(rc, out, "studdy"),
            note="its eval folder was made" if made else self.first_error(out)[:90],
        )

    def refused_before_a_folder(self, category: str, case: str, cwd: Path, rc: int | None, out: str, key: str) -> None:
        """Record a ``train.py`` run in ``cwd`` that should have refused ``key`` in one line before making a folder."""
        made = (cwd / "runs").exists()
        outcome = self.classify_error(rc, out, key)
        self.record(
            category,
            case,
            "unclear" if made and outcome == "clear" else outcome,
            note="a run folder was made" if made and rc else self.first_error(out)[:90],
        )
