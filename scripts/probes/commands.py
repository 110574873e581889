"""Bad values on the command line, multiruns, damaged checkpoints and caches, payloads, values that change a run, and
the runs of one folder (categories ``bad value``, ``multirun``, ``checkpoint``, ``cache``, ``security``, ``values``,
``runs``)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch
from zipdata import flip_tensor_byte, member_span

from probes.base import ProbeBase
from probes.common import GESTURE, GRAPH, MODULE_VALUES, TINY, Payload


class CommandCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def bad_values(self) -> None:
        for override, name in self.values:
            cwd = self.folder(override)
            # one epoch that ends on its own, so an accepted value finishes (trainer.max_epochs=-1 would not)
            rc, out = self.train(cwd, *TINY, override, timeout=240)
            self.record(
                "bad value",
                override,
                self.classify_error(rc, out, name),
                note="timed out after 240 s" if rc is None else "",
            )
        cwd = self.folder("data_dir-file")
        (cwd / "a_file").write_text("not a folder")
        rc, out = self.run("train.py", *TINY, f"paths.data_dir={cwd / 'a_file'}", cwd=cwd)
        self.record("bad value", "paths.data_dir=<a file>", self.classify_error(rc, out, "data_dir"))
        for label, target in (
            ("paths.results_dir=<under a file>", "a_file/results"),
            ("paths.results_dir=/proc/<unwritable>", "/proc/fsnn_results"),
        ):
            cwd = self.folder(label)
            (cwd / "a_file").write_text("not a folder")
            rc, out = self.train(cwd, *TINY, f"paths.results_dir={cwd / target if target[0] != '/' else target}")
            self.record("bad value", label, self.classify_error(rc, out, "results_dir"))
        if not torch.cuda.is_available():
            cwd = self.folder("accelerator-gpu")
            rc, out = self.train(cwd, *TINY, "trainer.accelerator=gpu")
            self.record("bad value", "trainer.accelerator=gpu (no GPU)", self.classify_error(rc, out, "accelerator"))
            cwd = self.folder("engine-triton")
            rc, out = self.train(cwd, *TINY, "neuron.engine=triton", env={"TRITON_INTERPRET": "0"})
            made = (cwd / "runs").exists()
            self.record(
                "bad value",
                "neuron.engine=triton (no GPU)",
                "unclear" if made and rc == 2 else self.classify_error(rc, out, "engine"),
                note="a run folder was made" if made else "",
            )

    def multirun(self) -> None:
        cwd = self.folder("multirun")
        rc, out = self.train(cwd, "-m", *TINY, "neuron.alpha=0.5,abc", timeout=600)
        outcome = self.classify_error(rc, out, "alpha")
        self.record("multirun", "-m neuron.alpha=0.5,abc (one bad job)", outcome)

    def checkpoints(self) -> None:
        ref = self.complete_run("ref")
        other = self.complete_run("other-model", "backbone.channels=16")

        def truncate(path):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

        def empty(path):
            path.write_bytes(b"")

        def random_bytes(path):
            path.write_bytes(os.urandom(path.stat().st_size))

        def another(path):
            shutil.copy(other / "checkpoints" / path.name, path)

        def bit_flip(path):
            flip_tensor_byte(path)

        damages = {
            "truncated": truncate,
            "empty": empty,
            "random bytes": random_bytes,
            "another model's": another,
            "bit flip in tensor data": bit_flip,
        }
        for ckpt, script in (("last.ckpt", "train.py"), ("best.ckpt", "evaluate.py")):
            for label, damage in damages.items():
                cwd, run = self.copy_run(ref, f"{ckpt}-{label}")
                before = (run / "metrics.json").read_text()
                damage(run / "checkpoints" / ckpt)
                if script == "train.py":
                    rc, out = self.train(cwd, *TINY)
                else:
                    rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", cwd=cwd)
                after = (run / "metrics.json").read_text() if (run / "metrics.json").exists() else None
                lost = after != before and (after is None or json.loads(after).get("status") != "complete")
                self.record(
                    "checkpoint", f"{label} {ckpt}, then {script}", self.classify_error(rc, out, ckpt), lost=lost
                )

    def caches(self) -> None:
        # graph feature cache: same-size corruption of the propagated features
        cwd = self.folder("graph-cache")
        rc, out = self.train(cwd, *GRAPH)
        caches = sorted((self.data / "fsnn_cache" / "graphs" / "cora").glob("propagate-*.pt"))
        if rc != 0 or not caches:
            raise RuntimeError(f"graph reference run failed or wrote no cache:\n{out[-3000:]}")
        for cache in caches:
            data = bytearray(cache.read_bytes())
            start, _ = member_span(cache)
            data[start : start + 4 * 500] = b"\xff" * (4 * 500)  # 500 NaN features, same size
            cache.write_bytes(bytes(data))
        rc, out = self.train(cwd, *GRAPH, "seed=1")
        m = self.metrics(self.run_dir_matching(cwd, "seed-1"))
        finite = m is not None and m.get("status") == "complete" and m["test_acc"] == m["test_acc"]
        named = any(str(c) in out or c.name in out for c in caches)
        outcome = "clear" if named and finite else "traceback" if "Traceback" in out else "silent"
        self.record(
            "cache",
            "graph feature cache, same-size corruption",
            outcome,
            note=f"test acc {m.get('test_acc') if m else None}",
        )

        # event-frame cache: bit rot inside a compressed sample
        cwd = frame_run = self.folder("frame-cache")
        rc, out = self.train(cwd, *GESTURE)
        frames = sorted((self.data / "fsnn_cache" / "dvsgesture").rglob("*.npz"))
        if rc != 0 or not frames:
            raise RuntimeError(f"gesture reference run failed or wrote no cache:\n{out[-3000:]}")
        for sample in frames:  # every sample, so that the run reads a damaged one
            start, size = member_span(sample, "frames.npy")
            data = bytearray(sample.read_bytes())
            for offset in range(start + size // 4, start + size - 4, max(size // 12, 1)):
                data[offset] ^= 0x5A  # inside the deflate stream: zlib cannot decode it
            sample.write_bytes(bytes(data))
        rc, out = self.train(cwd, *GESTURE, "seed=1")
        named = any(s.name in out for s in frames)
        outcome = (
            "traceback" if "Traceback" in out else "clear" if rc == 0 and named else ("unclear" if rc else "silent")
        )
        self.record("cache", "event-frame .npz, bit rot", outcome)

        # a partial DVS128 Gesture copy (110 of 1,077 training files) with verification on
        cwd = self.folder("gesture-verify")
        rc, out = self.train(cwd, *GESTURE, env={"FSNN_DATA_VERIFY": "1"})
        outcome = "silent" if rc == 0 else self.classify_error(rc, out, "1,077")
        self.record("cache", "DVS128 Gesture with 110 of 1,077 files, verify on", outcome)
        m = self.metrics(self.run_dir_matching(frame_run, "dataset"))
        has = m is not None and isinstance(m.get("split_sizes"), dict)
        self.record("cache", "metrics.json records split sizes", "clear" if has else "silent")

    def security(self) -> None:
        ref = self.complete_run("security-ref")

        def pickle_payload(run: Path, marker: Path) -> None:
            (run / "checkpoints" / "best.ckpt").write_bytes(pickle.dumps(Payload(str(marker))))

        def target_payload(run: Path, marker: Path) -> None:
            config = run / ".hydra" / "config.yaml"
            text = config.read_text()
            start = text.index("optimizer:")
            end = text.index("\n", text.index("weight_decay", start))
            config.write_text(
                text[:start] + f"optimizer:\n  _target_: shutil.copyfile\n  src: {config}\n  dst: {marker}" + text[end:]
            )

        cases = {
            "pickle payload in best.ckpt": (pickle_payload, "best.ckpt"),
            "_target_: shutil.copyfile in .hydra/config.yaml": (target_payload, "_target_"),
        }
        for label, (plant, name) in cases.items():
            for study in ("none", "energy"):
                cwd, run = self.copy_run(ref, f"{name}-{study}")
                marker = cwd / "PAYLOAD_RAN"
                plant(run, marker)
                rc, out = self.run(
                    "evaluate.py", f"run_dir={run}", f"paths.data_dir={self.data}", f"study={study}", cwd=cwd
                )
                outcome = "silent" if marker.exists() else self.classify_error(rc, out, name)
                self.record(
                    "security",
                    f"{label}, evaluate.py study={study}",
                    outcome,
                    note="payload ran" if marker.exists() else "",
                )

    def values(self) -> None:
        # the neurons called from Python: one ValueError naming the argument, not a deep error or NaN
        for case, code, word in MODULE_VALUES:
            cwd = self.folder(case)
            script = (
                "import torch, sys\nfrom fsnn import FractionalLIF\ntry:\n    " + code + "\n"
                "except ValueError as error:\n    print(f'fsnn: error: {error}'); sys.exit(2)\n"
                "except AssertionError as error:\n    print(f'accepted: {error}')\n"
            )  # silent
            proc = subprocess.run(
                [sys.executable, "-c", script],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=300,
                env=self.env(TRITON_INTERPRET="0"),
            )
            outcome = (
                "silent"
                if proc.returncode == 0
                else "traceback"
                if "Traceback" in proc.stderr
                else self.classify_error(proc.returncode, proc.stdout, word)
            )
            self.record(
                "values",
                case,
                outcome,
                note=(proc.stdout + proc.stderr).strip().splitlines()[-1][:80] if proc.stdout + proc.stderr else "",
            )
        # the precision Lightning ran is what metrics.json records (16-mixed runs as bf16-mixed on a CPU)
        cwd = self.folder("precision")
        rc, out = self.train(cwd, *TINY, "trainer.precision=16-mixed")
        run = self.run_dir_matching(cwd, "precision")
        m = self.metrics(run) or {}
        ran = "16-mixed" if torch.cuda.is_available() else "bf16-mixed"
        self.record(
            "values",
            "trainer.precision=16-mixed: metrics.json says what ran",
            "traceback" if "Traceback" in out else "clear" if m.get("precision") == ran else "silent",
            note=f"recorded {m.get('precision')!r}, ran {ran}",
        )
        # a complete run whose test accuracy is NaN: make_tables warns, names it and does not count it
        if m.get("status") == "complete":
            m["test_acc"] = float("nan")
            (run / "metrics.json").write_text(json.dumps(m))
            rc, out = self.run(
                "fsnn-report", "tables", "--results", str(cwd / "runs"), "--out", str(cwd / "tables"), cwd=cwd
            )
            counted = "1 complete" in out
            outcome = (
                "traceback"
                if "Traceback" in out
                else "clear"
                if str(run / "metrics.json") in out and not counted
                else "silent"
            )
            self.record(
                "values",
                "make_tables with a NaN test_acc",
                outcome,
                note="counted among the complete runs" if counted else "",
            )
        # a truncated PyG processed cache (Cora/processed/data.pt): named, and rebuilt from the raw files
        cwd = self.folder("pyg-processed")
        data = cwd / "data"
        shutil.copytree(self.data / "Cora" / "raw", data / "Cora" / "raw")
        graph = [*GRAPH, f"paths.data_dir={data}"]
        rc, out = self.run("train.py", *graph, cwd=cwd)
        cache = data / "Cora" / "processed" / "data.pt"
        if rc != 0 or not cache.exists():
            raise RuntimeError(f"graph reference run failed or wrote no processed cache:\n{out[-3000:]}")
        cache.write_bytes(cache.read_bytes()[: cache.stat().st_size // 2])
        rc, out = self.run("train.py", *graph, "seed=1", cwd=cwd)
        named = str(cache) in out
        outcome = "traceback" if "Traceback" in out else "clear" if named and rc == 0 else "unclear" if rc else "silent"
        self.record(
            "values",
            "truncated Cora/processed/data.pt",
            outcome,
            note="" if named else "the processed cache is not named",
        )

    def runs(self) -> None:
        # rerunning a finished run
        ref = self.complete_run("idempotent-ref")
        cwd, run = self.copy_run(ref, "rerun-complete")
        stamp = {p: p.stat().st_mtime_ns for p in run.rglob("*") if p.is_file() and p.suffix in (".json", ".ckpt")}
        start = time.perf_counter()
        rc, out = self.train(cwd, *TINY)
        took = time.perf_counter() - start
        touched = [p.name for p, t in stamp.items() if p.stat().st_mtime_ns != t]
        self.record(
            "runs",
            "rerun a finished run",
            "clear" if rc == 0 and not touched else "silent",
            note=f"{took:.0f} s; rewritten: {sorted(set(touched))}",
        )
        # a sweep rerun: one complete job, one failed job
        cwd = self.folder("sweep-rerun")
        self.train(cwd, "-m", *TINY, "task=nonsense,null", timeout=600)
        done = self.run_dir_matching(cwd, "task-null")
        mtime = (done / "metrics.json").stat().st_mtime_ns
        self.train(cwd, "-m", *TINY, "task=nonsense,null", timeout=600)
        redone = (done / "metrics.json").stat().st_mtime_ns != mtime
        self.record(
            "runs",
            "rerun a sweep with one complete job",
            "silent" if redone else "clear",
            note="complete job retrained" if redone else "",
        )
        # kill -9 after the first epoch, then rerun: same result as an uninterrupted run?
        args = ["experiment=graph_demo", "trainer.max_epochs=3", "logger=none", "trainer.enable_progress_bar=false"]
        straight = self.folder("uninterrupted")
        self.train(straight, *args)
        killed = self.folder("killed")
        proc = subprocess.Popen(
            [sys.executable, str(self.root / "train.py"), *args, f"paths.data_dir={self.data}"],
            cwd=killed,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None:
            if list((killed / "runs").rglob("last.ckpt")):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        self.train(killed, *args)
        a, b = (self.run_dir(c, "graph_demo") for c in (straight, killed))
        ma, mb = self.metrics(a), self.metrics(b)
        wa, wb = (
            torch.load(r / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)["state_dict"]
            for r in (a, b)
        )
        same = (
            ma["test_acc"] == mb["test_acc"]
            and ma["val_acc_best"] == mb["val_acc_best"]
            and all(torch.equal(wa[k], wb[k]) for k in wa)
        )
        diff = max(float((wa[k].float() - wb[k].float()).abs().max()) for k in wa)
        self.record(
            "runs",
            "kill -9 after epoch 0 + rerun = uninterrupted",
            "clear" if same else "silent",
            note=f"test acc {ma['test_acc']:.4f} vs {mb['test_acc']:.4f}, max weight diff {diff:.2g}",
        )
        # two identical commands at once
        cwd = self.folder("two-at-once")
        cmd = [sys.executable, str(self.root / "train.py"), *TINY, f"paths.data_dir={self.data}"]
        procs = [
            subprocess.Popen(cmd, cwd=cwd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(2)
        ]
        outs = [(p.wait(timeout=600), p.stdout.read()) for p in procs]
        refused = [out for rc, out in outs if rc != 0]
        outcome = (
            "silent"
            if not refused
            else "clear"
            if len(refused) == 1 and "pid" in refused[0] and "Traceback" not in refused[0]
            else self.classify_error(1, refused[0], "pid")
        )
        self.record("runs", "two identical commands at once", outcome, note=f"exit codes {[rc for rc, _ in outs]}")
        # files under a group-writable umask
        cwd = self.folder("umask")
        self.train(cwd, *TINY, umask=0o002)
        run = self.run_dir(cwd)
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in run.rglob("*") if p.is_file()}
        private = sorted(name for name, mode in modes.items() if mode != "0o664")
        self.record(
            "runs",
            "files under umask 002 are 0664",
            "silent" if private else "clear",
            note=f"not 0664: {private}" if private else "",
        )
