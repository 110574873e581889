"""The event datasets' caches, labels and files, and the fixtures' writer (categories ``cache keys``, ``labels``,
``reads``, ``writers``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from probes.base import ProbeBase
from probes.common import ERROR_LINE, GRAPH, HERE, read_json, tree_hashes
from probes.snippets import ACCEPTED, LABELS, MARKER_EDITED, RAW_CHANGED, SERVE


class EventDataCases(ProbeBase):
    """These cases, as methods that :class:`probe_runs.Probe` collects."""

    def data_snippets(self, category: str, cases: list[tuple[str, Path, str, str]]) -> None:
        """:meth:`snippets` of the cases ``(case, data, body, word)`` on the event datasets: ``body`` runs after
        :data:`SERVE` with ``data`` (a fixture copy of the case's own) bound."""
        self.snippets(
            category, [(case, f"{SERVE}data = Path({str(data)!r})\n{body}", word) for case, data, body, word in cases]
        )

    def event_copy(self, name: str, *folders: str) -> Path:
        """A fresh folder for the case ``name`` holding a copy of the fixture ``folders`` (whole): its data folder."""
        return self.private_data(self.folder(name), *folders, part="")

    def cache_keys(self) -> None:
        """The event frame cache serves what its raw files and the source say now: a raw recording changed after
        its frames were cached (edited, replaced with its old time kept) is integrated again, and a marker edited (its
        labels, a wrong CRC-32) is not believed, nor re-read forever. The fingerprint is each raw file's size and
        modification time, as make's and rsync's quick check: a file rewritten in place at the same size with its
        old time put back is not noticed, by design (reading every raw file at each run would undo the cache)."""
        raw = [
            ("edited (new content, size and time)", "raw.write_bytes(other.read_bytes())"),
            (
                "replaced by another, its old time kept (an archive extracted again)",
                "raw.write_bytes(other.read_bytes())\nos.utime(raw, ns=(stat.st_atime_ns, stat.st_mtime_ns))",
            ),
        ]
        cases = [
            (f"a raw recording {label}", self.event_copy(label, "NMNIST"), RAW_CHANGED.format(change=change), "")
            for label, change in raw
        ]
        marker = [
            ("with its labels edited", "marker['labels'] = [(label + 1) % 10 for label in marker['labels']]"),
            ("with a wrong CRC-32 for a healthy sample", "marker['checksums'][train.indices[0]] ^= 1"),
        ]
        cases += [
            (f"a cache marker {label}", self.event_copy(label, "NMNIST"), MARKER_EDITED.format(edit=edit), "")
            for label, edit in marker
        ]
        self.data_snippets("cache keys", cases)

    def labels(self) -> None:
        """A class's label is the release's, whichever class folders a copy holds; a folder the release does not have
        is refused by name."""
        missing = "shutil.rmtree(copy / {!r})"
        cases = [
            (
                "N-Caltech101 without the Faces_easy folder",
                "NCALTECH101",
                LABELS.format(name="ncaltech101", change=missing.format("NCALTECH101/Caltech101/Faces_easy")),
                "",
            ),
            (
                "N-Caltech101 with a folder the release lacks (Airplanes)",
                "NCALTECH101",
                LABELS.format(
                    name="ncaltech101",
                    change="os.rename(copy / 'NCALTECH101/Caltech101/airplanes', copy / 'NCALTECH101/Caltech101/Airplanes')",
                ),
                "Airplanes",
            ),
            (
                "DVS-Lip without the word folder 'action'",
                "DVSLip",
                LABELS.format(
                    name="dvslip",
                    change="\n".join(missing.format(f"DVSLip/DVS-Lip/{split}/action") for split in ("train", "test")),
                ),
                "",
            ),
            (
                "MINI-HARDVS without action_002",
                "MINI_HARDVS",
                LABELS.format(
                    name="hardvs_mini",
                    change="\n".join(
                        missing.format(f"MINI_HARDVS/events_np/{split}/action_002")
                        for split in ("train", "val", "test")
                    ),
                ),
                "",
            ),
        ]
        self.data_snippets(
            "labels", [(case, self.event_copy(case, folder), body, word) for case, folder, body, word in cases]
        )

    def reads(self) -> None:
        """Reads of files a run, a user or a fixture left: a damaged saved config, a record of a run that never
        finished, a fixture folder that cannot be written, a frame cache folder that is a link, event coordinates
        outside the sensor or not numbers: one line naming the file (or the safe behaviour)."""
        cwd = self.folder("reads-ref")
        data = self.private_data(cwd, "Cora")
        ref = self.fabricated_run(cwd, data)
        configs = [
            ("invalid YAML", b"model: [unclosed\n"),
            ("valid YAML without a run's sections", b"seed: 0\nnote: mine\n"),
            ("empty", b""),
            ("a YAML list", b"- dataset\n- neuron\n"),
            ("bytes that are not UTF-8", b"\xff\xfe\x00model: \xc3\x28\n"),
        ]
        for label, text in configs:
            cwd, run = self.copy_run(ref, label)
            (run / ".hydra" / "config.yaml").write_bytes(text)
            rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", cwd=cwd)
            self.record(
                "reads",
                f"evaluate.py: .hydra/config.yaml {label}",
                self.classify_error(rc, out, ".hydra/config.yaml"),
                note=self.first_error(out)[:90],
            )
        for status, args in (("running", ()), ("interrupted", ()), ("running", ("allow_unfinished=true",))):
            cwd, run = self.copy_run(ref, f"status-{status}-{len(args)}")
            (run / "metrics.json").write_text(json.dumps({"status": status, "seed": 0}))
            rc, out = self.run("evaluate.py", f"run_dir={run}", f"paths.data_dir={data}", *args, cwd=cwd)
            written = [name for name in ("eval.json", "energy.json") if (run / name).exists()]
            if args:  # evaluated, and its output says the run was unfinished?
                unfinished = rc == 0 and written and (read_json(run / written[0]) or {}).get("run_unfinished")
                outcome = "clear" if unfinished else self.behaviour(rc, out)
            else:
                outcome = "silent" if rc == 0 or written else self.classify_error(rc, out, str(run))
            self.record(
                "reads",
                f"evaluate.py {' '.join(args)} on a record saying {status}, no process".replace("  ", " "),
                outcome,
                note=self.first_error(out)[:90],
            )
        self.fixtures_unwritable()
        self.frame_reads()

    def fixtures_unwritable(self) -> None:
        """``fsnn-fixtures`` on a file, a path under a file, a read-only folder: one line naming it."""
        cwd = self.folder("fixtures-unwritable")
        (afile := cwd / "afile").write_text("mine")
        (read_only := cwd / "read-only").mkdir()
        for label, target, options in (
            ("a file", afile, {}),
            ("a path under a file", afile / "data", {}),
            ("a read-only folder", read_only, {"read_only": read_only}),
        ):
            if options and not shutil.which("unshare"):
                print("  (no unshare here to mount a folder read-only: no read-only case)", flush=True)
                continue
            rc, out = self.run("fsnn-fixtures", str(target), "--only", "nmnist", cwd=cwd, **options)
            self.record(
                "reads",
                f"fsnn-fixtures on {label}",
                self.classify_error(rc, out, str(afile if target != read_only else read_only)),
                lost=afile.read_text() != "mine",
                note=next((line for line in out.splitlines() if ERROR_LINE.match(line)), out.strip()[-90:])[:90],
            )

    def frame_reads(self) -> None:
        """A frame cache folder that is a link (to another disk), a file of the user's in it, and raw events outside
        the sensor or at a coordinate that is not a number."""
        linked = (
            "split = serve('nmnist', data)[0].cache.dir\nelsewhere = data.parent / 'other-disk'\n"
            "shutil.move(split, elsewhere)\nsplit.symlink_to(elsewhere)\n(elsewhere / 'notes.txt').write_text('mine')\n"
            "(split / '_COMPLETE.json').unlink()  # stale: rebuilt\n"
            "again = frames(serve('nmnist', data)[0])\n"
            "assert split.is_symlink(), 'the linked cache folder was replaced by a folder'\n"
            "assert (elsewhere / 'notes.txt').exists(), 'a file of the user\\'s in the cache folder was removed'\n"
            "assert np.array_equal(again, frames(serve('nmnist', data, data / 'fresh-cache')[0])), 'other frames'\n"
        )
        cases = [
            ("a frame cache folder linked to another disk, stale", self.event_copy("linked", "NMNIST"), linked, "")
        ]
        gesture = [("x = 200 on the 128-pixel sensor", "x", 200), ("y = -1", "y", -1)]
        for label, axis, value in gesture:
            data = self.event_copy(label, "DVSGesture")
            path = sorted((data / "DVSGesture" / "ibmGestureTrain").glob("*/0.npy"))[0]
            events = np.load(path)
            events[3, "xy".index(axis)] = value  # columns x, y, p, t
            np.save(path, events)
            cases.append(
                (
                    f"DVS128 Gesture: an event at {label}",
                    data,
                    ACCEPTED.format(name="dvsgesture"),
                    f"{path.parent.name}/{path.name}",
                )
            )
        data = self.event_copy("nan-coordinate", "MINI_HARDVS")
        path = sorted((data / "MINI_HARDVS" / "events_np" / "train").rglob("*.npz"))[0]
        events = dict(np.load(path))
        events["x"] = events["x"].astype(np.float64)
        events["x"][2] = np.nan
        np.savez(path, **events)
        cases.append(
            (
                "MINI-HARDVS: an event at x = NaN",
                data,
                ACCEPTED.format(name="hardvs_mini"),
                f"{path.parent.name}/{path.name}",
            )
        )
        self.data_snippets("reads", cases)

    def writers(self) -> None:
        """``fsnn-fixtures`` looks before it writes: real data is refused by name and left as it was, a fake written
        over another leaves what the command wrote, a write that fails leaves no partial dataset; the fakes'
        runs train without ``FSNN_DATA_VERIFY=0`` and are recorded as fake, real data never."""
        real = HERE / "tests" / "data" / "planetoid" / "Cora"
        for label, copy, only in (
            ("the real Cora", lambda data: shutil.copytree(real, data / "Cora"), "cora"),
            (
                "an N-MNIST copy of the user's (a file no fake has)",
                lambda data: (
                    (data / "NMNIST" / "Train" / "0").mkdir(parents=True)
                    or (data / "NMNIST" / "Train" / "0" / "mine.bin").write_bytes(b"\x01\x02\x80\x00\x10" * 30)
                ),
                "nmnist",
            ),
        ):
            cwd = self.folder(f"writers-{only}")
            copy(data := cwd / "data")
            kept = tree_hashes(data)
            rc, out = self.run("fsnn-fixtures", str(data), "--only", only, cwd=cwd)
            self.record(
                "writers",
                f"--only {only} over {label}",
                self.classify_error(rc, out, str(data)),
                lost=any(tree_hashes(data).get(name) != digest for name, digest in kept.items()),
                note=f"{len(set(tree_hashes(data)) - set(kept))} files added, "
                f"{sum(tree_hashes(data).get(name) != digest for name, digest in kept.items())} of {len(kept)} replaced"
                if rc == 0
                else self.first_error(out)[:90],
            )
        # a fake over another: the folder holds what the second command writes into an empty one
        for label, first, second in (
            ("--scale 0.001 over --scale 0.004", ["--scale", "0.004"], ["--scale", "0.001"]),
            ("--scale 0.001 over the tiny fake", [], ["--scale", "0.001"]),
            ("the tiny fake over itself", [], []),
        ):
            cwd = self.folder(label)
            self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", *first, cwd=cwd)
            rc, out = self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", *second, cwd=cwd)
            self.run("fsnn-fixtures", str(cwd / "fresh"), "--only", "nmnist", *second, cwd=cwd)
            found, fresh = tree_hashes(cwd / "data"), tree_hashes(cwd / "fresh")
            self.record(
                "writers",
                label,
                ("clear" if found == fresh else "silent") if rc == 0 else self.classify_error(rc, out, "data"),
                note=f"{len(found)} files where the command alone writes {len(fresh)}",
            )
        # the disk fills up (a file may grow to 16 KiB) while Cora's fake is written, after N-MNIST's
        cwd = self.folder("writers-disk-full")
        rc, out = self.run("fsnn-fixtures", str(cwd / "data"), "--only", "nmnist", "cora", cwd=cwd, file_size=16384)
        self.run("fsnn-fixtures", str(cwd / "fresh"), "--only", "nmnist", "cora", cwd=cwd)
        partial = (
            sorted(
                folder.name
                for folder in (cwd / "data").iterdir()
                if tree_hashes(folder) != tree_hashes(cwd / "fresh" / folder.name)
            )
            if (cwd / "data").is_dir()
            else []
        )
        self.record(
            "writers",
            "disk full while writing Cora's fake",
            "silent" if partial else self.classify_error(rc, out, str(cwd / "data")),
            note=f"partial datasets left: {partial}" if partial else self.first_error(out)[:90],
        )
        self.fake_runs()

    def fake_runs(self) -> None:
        """The smoke routes on ``fsnn-fixtures DIR`` with the loaders' checks on: they train, and each run says it
        ran on fake data; a run on real data beside a fake never does."""
        fakes = self.folder("writers-fakes") / "data"
        self.run("fsnn-fixtures", str(fakes), cwd=fakes.parent)
        real = self.folder("writers-real-beside-a-fake") / "data"
        shutil.copytree(HERE / "tests" / "data" / "planetoid" / "Cora", real / "Cora")
        self.run("fsnn-fixtures", str(real), "--only", "nmnist", cwd=real.parent)
        for label, data, args, fake in (
            (
                "graph smoke route",
                fakes,
                ["experiment=table2_node_classification_smoke", "dataset=cora", "backbone=sgcn", "neuron=flif"],
                True,
            ),
            (
                "vision smoke route",
                fakes,
                ["experiment=table1_neuromorphic_smoke", "setup=nmnist_cnn", "neuron=flif"],
                True,
            ),
            ("real Cora beside a fake N-MNIST", real, GRAPH, False),
        ):
            cwd = self.folder(label)
            # as a user runs it: the variable unset (empty reads as unset), verification at its default
            rc, out = self.run("train.py", *args, f"paths.data_dir={data}", cwd=cwd, env={"FSNN_DATA_VERIFY": ""})
            found = [read_json(path) or {} for path in (cwd / "runs").rglob("metrics.json")]
            m = found[0] if len(found) == 1 else {}
            right = rc == 0 and m.get("status") == "complete" and (m.get("fake_data") is True) == fake
            self.record(
                "writers",
                f"{label}, FSNN_DATA_VERIFY unset: {'recorded as fake' if fake else 'never recorded as fake'}",
                "clear" if right else self.behaviour(rc, out),
                note=f"exit {rc}, {len(found)} runs, fake_data {m.get('fake_data')!r}"
                + (f": {self.first_error(out)[:60]}" if rc else ""),
            )
