"""Data that no longer matches a run, and caches and inputs that lie (categories ``mismatch``, ``inputs``)."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from probes.base import ProbeBase
from probes.common import GRAPH, Payload, edge_beyond, edit_pickle, names_sampler, read_json, truncation, with_nan


class InputCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def mismatch(self) -> None:
        """Data that no longer matches the run, and graph files whose content is corrupt."""
        cwd = self.folder("evaluate-data-changed")
        data = self.private_data(cwd, "Cora", "CiteSeer")
        run = self.fabricated_run(cwd, data)
        shutil.rmtree(data / "Cora")  # the data folder replaced by another dataset's files (3703 features)
        (data / "Cora" / "raw").mkdir(parents=True)
        for path in (data / "CiteSeer" / "raw").iterdir():
            shutil.copy(path, data / "Cora" / "raw" / path.name.replace("citeseer", "cora"))
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "mismatch",
            "evaluate.py after the data changed (another feature count)",
            self.classify_error(rc, out, "ind.cora"),
            note=self.first_error(out)[:100],
        )
        cwd = self.folder("evaluate-weights-shape")
        data = self.private_data(cwd, "Cora")
        run = self.fabricated_run(cwd, data, shape="other")
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "mismatch",
            "evaluate.py: best.ckpt's weights of another shape, its own config",
            self.classify_error(rc, out, "best.ckpt"),
            note=self.first_error(out)[:100],
        )
        for label, folder, damage, name in (
            ("an edge beyond the node count in ind.cora.graph", "Cora", edge_beyond, "ind.cora.graph"),
            ("a truncated ind.cora.x", "Cora", truncation("ind.cora.x"), "ind.cora.x"),
            (
                "a truncated amazon_electronics_photo.npz",
                "Photo",
                truncation("amazon_electronics_photo.npz"),
                "amazon_electronics_photo.npz",
            ),
        ):
            cwd = self.folder(f"corrupt-{folder}")  # a folder name that does not name the file
            data = self.private_data(cwd, folder)
            damage(data / folder / "raw")
            rc, out = self.run("train.py", *GRAPH, f"dataset={folder.lower()}", f"paths.data_dir={data}", cwd=cwd)
            self.record(
                "mismatch",
                f"train.py on {label}",
                self.classify_error(rc, out, f"raw/{name}"),
                note=self.first_error(out)[:100],
            )

    def load_graph(self, cwd: Path, data: Path, name: str = "cora") -> tuple[str | None, str]:
        """``load_graph(name)`` of the checkout in a process of its own: ``(what it read, output)``, what it read as
        ``x <features> y <labels digest>`` (``None`` when it read nothing)."""
        code = (
            "import sys, hashlib; from fsnn.data import load_graph\n"
            "g = load_graph(sys.argv[1], data_dir=sys.argv[2], download=False)\n"
            "print('read: x', g.x.shape[1], 'y', hashlib.sha256(g.y.numpy().tobytes()).hexdigest()[:12])\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code, name, str(data)],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
        )
        read = next((line for line in proc.stdout.splitlines() if line.startswith("read: ")), None)
        return read, proc.stdout + proc.stderr

    def inputs(self) -> None:
        """Caches and inputs that lie: a processed cache holding a pickle, another dataset's or a stale one, a NaN
        feature, a truncated compiled extension, and the Poisson sampler a run's numbers depend on."""
        for file, form in (("data.pt", "torch.save"), ("pre_transform.pt", "torch.save"), ("data.pt", "bare pickle")):
            cwd = self.folder(f"processed-payload-{file}-{form}")
            data = self.private_data(cwd, "Cora")
            self.load_graph(cwd, data)
            marker, path = cwd / "PAYLOAD_RAN", data / "Cora" / "processed" / file
            if form == "torch.save":
                torch.save(Payload(str(marker)), path)
            else:
                path.write_bytes(pickle.dumps(Payload(str(marker))))
            read, out = self.load_graph(cwd, data)
            ran = marker.exists()
            self.record(
                "inputs",
                f"a pickle payload in Cora/processed/{file} ({form}), then load_graph",
                "silent"
                if ran
                else "traceback"
                if "Traceback" in out
                else "clear"
                if read and str(path.parent) in out
                else "unclear",
                security=ran,
                note="payload ran" if ran else "",
            )
        cwd = self.folder("foreign-processed")
        data = self.private_data(cwd, "Cora", "CiteSeer")
        cora, _ = self.load_graph(cwd, data)
        self.load_graph(cwd, data, "citeseer")
        shutil.rmtree(data / "Cora" / "processed")
        shutil.copytree(data / "CiteSeer" / "processed", data / "Cora" / "processed")
        read, out = self.load_graph(cwd, data)
        self.record(
            "inputs",
            "CiteSeer's processed cache in Cora/processed, then load_graph",
            "traceback"
            if "Traceback" in out
            else "clear"
            if read == cora and str(data / "Cora" / "processed") in out
            else "silent",
            note=f"{read} where Cora's files give {cora}" if read != cora else "",
        )
        cwd = self.folder("stale-processed")
        data = self.private_data(cwd, "Cora")
        self.load_graph(cwd, data)
        edit_pickle(data / "Cora" / "raw" / "ind.cora.ally", lambda y: np.roll(y, 1, axis=1))  # other labels
        fresh = self.private_data(self.folder("stale-processed-reference"), "Cora")
        shutil.copy(data / "Cora" / "raw" / "ind.cora.ally", fresh / "Cora" / "raw" / "ind.cora.ally")
        expected, _ = self.load_graph(cwd, fresh)
        read, out = self.load_graph(cwd, data)
        self.record(
            "inputs",
            "raw labels replaced after processing, then load_graph",
            "traceback"
            if "Traceback" in out
            else "clear"
            if read == expected and str(data / "Cora" / "processed") in out
            else "silent",
            note="" if read == expected else "the graph of the old files",
        )
        cwd = self.folder("nan-feature")
        data = self.private_data(cwd, "Cora")
        edit_pickle(data / "Cora" / "raw" / "ind.cora.allx", with_nan)
        rc, out = self.run("train.py", *GRAPH, f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "inputs",
            "one NaN in the raw features, then train.py",
            self.classify_error(rc, out, "ind.cora"),
            note=self.first_error(out)[:100] or f"exit {rc}",
        )
        if not self.fast:  # built again: a compilation
            self.truncated_extension()
        cwd = self.folder("sampler-recorded-eval")
        data = self.private_data(cwd, "Cora")
        run = self.fabricated_run(cwd, data)
        rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
        self.record(
            "inputs",
            "eval.json names the Poisson sampler that drew the spikes",
            names_sampler(read_json(run / "eval.json"), out),
        )
        if not self.fast:
            cwd = self.folder("sampler-recorded-train")
            rc, out = self.train(cwd, *GRAPH)
            self.record(
                "inputs",
                "metrics.json names the Poisson sampler that drew the spikes",
                names_sampler(self.metrics(self.run_dir_matching(cwd, "dataset")), out),
            )

    def truncated_extension(self) -> None:
        """The Poisson sampler's compiled extension, copied with its ``built`` marker into a build folder of the
        case's own, its library cut in half: then a process that draws spikes with it."""
        find = (
            "from fsnn.models import poisson as p\nfrom torch.utils import cpp_extension as c\nimport os\n"
            "ok = p.EXTENSION.unavailable_reason() is None\n"
            "root = os.environ.get('TORCH_EXTENSIONS_DIR') or c.get_default_build_root()\n"
            "print(root if ok else '', p.EXTENSION.build_directory() if ok else '')\n"
        )
        proc = subprocess.run([sys.executable, "-c", find], env=self.env(), capture_output=True, text=True, timeout=900)
        words = proc.stdout.split()
        if proc.returncode != 0 or len(words) != 2:
            print("  (the Poisson kernels cannot be built here: no truncated-extension case)", flush=True)
            return
        root, folder = Path(words[0]), Path(words[1])
        cwd = self.folder("truncated-extension")
        copy = cwd / "extensions" / folder.relative_to(root)
        shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("lock", ".fsnn.lock"))
        library = copy / "fsnn_poisson_kernels.so"
        library.write_bytes(library.read_bytes()[: library.stat().st_size // 2])
        code = (
            "import torch; from fsnn.models.poisson import poisson_encode\n"
            "print('sampler', poisson_encode(torch.rand(40, 100), 5).sampler)\n"
        )
        env = {"TORCH_EXTENSIONS_DIR": str(cwd / "extensions")}
        try:
            done = subprocess.run(
                [sys.executable, "-c", code], cwd=cwd, env=self.env(**env), capture_output=True, text=True, timeout=900
            )
            rc, out = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired:
            rc, out = None, ""
        outcome = (
            "unclear"
            if rc is not None and rc < 0
            else "traceback"
            if "Traceback" in out
            else "clear"
            if rc == 0 and library.name in out
            else "silent"
        )
        self.record(
            "inputs",
            "a truncated compiled extension with its built marker",
            outcome,
            note=f"killed by signal {-rc}" if rc is not None and rc < 0 else out.strip()[-80:],
        )
