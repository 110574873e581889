"""Strings that become paths, and one configuration in one folder (categories ``confined``, ``folders``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from probes.base import ProbeBase
from probes.common import HERE, TINY


class ConfinedCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def confined(self) -> None:
        """A string from a config, an override, the environment or a run record that becomes a path stays in its
        root: refused in one line before any folder, or made safe."""
        for override, key in (
            ("task_name=../../outside", "task_name"),
            ("run_name=..", "run_name"),
            ("logger.name=../../outside", "logger.name"),
        ):
            cwd = self.folder(override)
            (cwd / "a" / "b").mkdir(parents=True)
            rc, out = self.train(cwd / "a" / "b", *TINY, "logger=csv", override)  # TINY has no logger
            escaped = (cwd / "outside").exists() or (cwd / "a" / "outside").exists()
            self.record(
                "confined",
                override,
                self.classify_error(rc, out, key),
                security=escaped,
                note="a folder was made outside" if escaped else "",
            )
        # a name too long for a folder (many overrides, a long run_name), and a stray FSNN_SWEEP_JOBS
        long = [
            *TINY,
            "neuron.alpha=0.5",
            "neuron.tau=2.0",
            "neuron.threshold=1.0",
            "neuron.memory=64",
            "optimizer.weight_decay=0.0",
            "dataset.val_fraction=0.1",
            "seed=0",
            "tau_lr_scale=1.0",
            "neuron.surrogate_scale=4.0",
            "dataset.T=8",
            "neuron.learn_alpha=false",
        ]
        for label, args in (
            ("18 overrides, a folder name over 255 bytes", long),
            ("run_name of 300 characters", [*TINY, "run_name=" + "r" * 300]),
        ):
            cwd = self.folder(label)
            victim = cwd / "victim"
            victim.write_text("kept")
            rc, out = self.train(cwd, *args, env={"FSNN_SWEEP_JOBS": str(victim)})
            again, out2 = self.train(cwd, *args)
            runs = list((cwd / "runs" / "train").glob("*/metrics.json")) if rc == 0 else []
            whole = (self.metrics(runs[0].parent) or {}).get("run_whole_name") if len(runs) == 1 else None
            ok = rc == 0 and whole and again == 0 and "is finished" in out2
            self.record(
                "confined",
                label,
                "clear" if ok else self.behaviour(rc, out),
                security=victim.read_text() != "kept",
                note=f"folder {len(runs[0].parent.name.encode())} bytes, rerun finds it"
                if ok
                else self.first_error(out) or out.strip().splitlines()[-1][:100]
                if out.strip()
                else "",
            )
        # evaluate.py's run_dir split by the shell at a space
        cwd = self.folder("run_dir-split")
        rc, out = self.run("evaluate.py", f"run_dir={cwd}/my", "run", cwd=cwd)
        outcome = self.classify_error(rc, out, "run_dir")
        self.record(
            "confined",
            "evaluate.py run_dir=<path with a space, unquoted>",
            "unclear" if outcome == "clear" and "quote" not in out else outcome,
        )
        # run records whose strings name files: a recipe (a table's file), a dataset (a figure's file)
        cwd = self.folder("record-paths")
        results, out_dir = cwd / "results", cwd / "a" / "b" / "tables"
        run = results / "table2_node_classification" / "run"
        run.mkdir(parents=True)
        config = {
            "dataset": {"name": "../../../../victim_figure"},
            "backbone": {"name": "sgcn"},
            "neuron": {"name": "flif"},
        }
        record = {
            "status": "complete",
            "metric": "acc",
            "metric_unit": "fraction",
            "test_acc": 0.5,
            "val_acc_best": 0.5,
            "recipe": "../../../victim",
            "seed": 0,
            "epochs": 1,
            "task": "table2_node_classification",
            "config": config,
        }
        (run / "metrics.json").write_text(json.dumps(record))
        rc, out = self.run("fsnn-report", "tables", "--results", str(results), "--out", str(out_dir), cwd=cwd)
        escaped = [p.name for p in cwd.rglob("victim*")]
        self.record(
            "confined",
            "make_tables: a record's recipe ../../../victim",
            "traceback" if "Traceback" in out else "clear" if "recipe" in out and not escaped else "silent",
            security=bool(escaped),
            note=f"wrote {escaped}" if escaped else "",
        )
        record["recipe"] = "matched"
        (run / "metrics.json").write_text(json.dumps(record))
        (run / "robustness.json").write_text(
            json.dumps(
                {
                    "robustness": "graph",
                    "metric": "acc",
                    "metric_unit": "fraction",
                    "clean": 0.5,
                    "config": config,
                    "corruptions": {"feature_mask": {"levels": [0.1, 0.2], "acc": [0.4, 0.3], "score": 70.0}},
                }
            )
        )
        rc, out = self.run(
            "fsnn-report",
            "figures",
            "--results",
            str(results),
            "--out",
            str(cwd / "a" / "figures"),
            cwd=cwd,
            timeout=900,
        )
        escaped = [str(p.relative_to(cwd)) for p in cwd.rglob("*victim_figure*") if p.parent != cwd / "a" / "figures"]
        self.record(
            "confined",
            "figures.py: a record's dataset name ../../../../x",
            "traceback" if "Traceback" in out else "clear" if rc == 0 else self.behaviour(rc, out),
            security=bool(escaped),
            note=f"wrote {escaped}" if escaped else "",
        )
        # a crafted checkpoint's stored paths (Lightning deletes the replaced best file when a better epoch comes)
        ref = self.complete_run("crafted-paths-ref", "trainer.max_epochs=1")
        cwd, run = self.copy_run(ref, "crafted-paths")
        victim = cwd / "victim.ckpt"
        victim.write_text("kept")
        code = (
            "import sys, torch; from pathlib import Path; from fsnn.suite.checkpoint import save_checkpoint\n"
            "run, victim = Path(sys.argv[1]), sys.argv[2]\npath = run / 'checkpoints' / 'last.ckpt'\n"
            "state = torch.load(path, weights_only=True)\nconfig = state.pop('fsnn')['config']\n"
            "for key, value in state['callbacks'].items():\n    if 'best_model_path' in value:\n"
            "        value['best_k_models'] = {victim: -1.0}\n"
            "        value['kth_best_model_path'] = victim; value['best_model_path'] = victim\n"
            "        value['best_model_score'] = value['kth_value'] = torch.tensor(-1.0)\n"
            "save_checkpoint(state, path, config)\n"
        )
        crafted = subprocess.run(
            [sys.executable, "-c", code, str(run), os.path.relpath(victim, run / "checkpoints")],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        (run / "metrics.json").unlink()  # so that the rerun resumes from the crafted last.ckpt
        rc, out = (
            self.train(cwd, *TINY, "trainer.max_epochs=1", "trainer.max_epochs=2")
            if crafted.returncode == 0
            else (None, crafted.stderr)
        )
        touched = not victim.exists() or "victim" in out  # deleted, or read as the run's checkpoint
        self.record(
            "confined",
            "a checkpoint's best_model_path ../../victim, resumed",
            "traceback" if "Traceback" in out else "clear" if rc == 0 else self.behaviour(rc, out),
            security=touched,
            note="the victim file was deleted or read" if touched else "",
        )

    def folders(self) -> None:
        """One configuration, one folder: a sweep and a single run of it, a key given twice or at its default value,
        and the command of a committed run, which must find it finished."""
        self.committed_rerun()
        if self.fast:
            return
        cwd = self.folder("sweep-then-single")
        self.train(cwd, "-m", *TINY, "neuron.learn_alpha=true", timeout=600)
        for label, args in (
            ("-m neuron.learn_alpha=true, then neuron.learn_alpha=true", ["neuron.learn_alpha=true"]),
            (
                "then neuron.learn_alpha=false neuron.learn_alpha=true",
                ["neuron.learn_alpha=false", "neuron.learn_alpha=true"],
            ),
        ):
            rc, out = self.train(cwd, *TINY, *args)
            self.one_folder(cwd, label, out)
        # a smoke config sets its sweep's seed: the sweep's job is given seed=0, the single run is not
        cwd = self.folder("smoke-sweep-then-single")
        self.train(cwd, "-m", "+smoke=vision", timeout=600)
        rc, out = self.train(cwd, "+smoke=vision")
        self.one_folder(cwd, "-m +smoke=vision, then +smoke=vision", out)
        cwd = self.folder("defaults-given")
        self.train(cwd, *TINY)
        rc, out = self.train(cwd, *TINY, "seed=0", "neuron=flif")
        self.one_folder(cwd, "train.py, then seed=0 neuron=flif (the defaults)", out)

    def one_folder(self, cwd: Path, label: str, out: str) -> None:
        folders = list((cwd / "runs" / "train").glob("*/metrics.json"))
        self.record(
            "folders",
            label,
            "traceback" if "Traceback" in out else "clear" if len(folders) == 1 and "is finished" in out else "silent",
            note=f"{len(folders)} folders for one configuration",
        )

    def committed_rerun(self) -> None:
        """The recorded command of a committed run (its overrides, the data where this checkout has it) in a copy of
        its folder, run as the README adds runs to the evidence (``FSNN_RESULTS=results``): finished, nothing
        trained."""
        committed = HERE / "results" / "table2_node_classification" / "backbone-sgcn+dataset-cora+neuron-flif+seed-0"
        cwd = self.folder("committed-rerun")
        run = cwd / "results" / committed.parent.name / committed.name
        shutil.copytree(committed, run)
        overrides = [
            o
            for o in json.loads((committed / "metrics.json").read_text())["overrides"]
            if not o.startswith("paths.data_dir=")
        ]
        rc, out = self.run(
            "train.py",
            *overrides,
            f"paths.data_dir={HERE / 'tests' / 'data' / 'planetoid'}",
            cwd=cwd,
            env={"FSNN_RESULTS": "results"},
        )
        found = sorted(p.parent.name for p in (cwd / "results").rglob("metrics.json"))
        self.record(
            "folders",
            "a committed run's own command (backbone-sgcn+...+seed-0)",
            "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 0 and "is finished" in out and found == [committed.name]
            else "silent",
            note=f"folders {found}",
        )
