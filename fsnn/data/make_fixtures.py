"""``fsnn-fixtures DIR``: write tiny fake copies of the vision and graph datasets, in their real on-disk formats, into
``DIR`` (:func:`fsnn.data.fixtures.write_fixtures`), for smoke runs that need no download::

    fsnn-fixtures fake_data
    fsnn-train experiment=table2_node_classification_smoke paths.data_dir=fake_data

The event and image fakes are smaller than the published releases, so a run on them sets ``FSNN_DATA_VERIFY=0``
(the loaders' completeness checks: file counts, md5 sums); the graphs load as they are. ``python -m
fsnn.data.make_fixtures DIR`` is the same command.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fsnn.data.fixtures import FIXTURE_NAMES, write_fixtures


def main(argv=None) -> int:
    """The ``fsnn-fixtures`` command: write the fakes and list them; returns the exit status (0).

    Args:
        argv: the command line after the program name (default ``None``: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        prog="fsnn-fixtures",
        description="Write tiny fake copies of the vision and graph datasets, in their real "
        "on-disk formats, into DIR, for smoke runs that need no download.",
        epilog="Then: fsnn-train ... paths.data_dir=DIR (event and image fakes also need FSNN_DATA_VERIFY=0).",
    )
    parser.add_argument("out_dir", type=Path, metavar="DIR", help="folder to write into (then paths.data_dir=DIR)")
    parser.add_argument(
        "--only", nargs="+", choices=FIXTURE_NAMES, metavar="NAME", help=f"subset of {', '.join(FIXTURE_NAMES)}"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    written = write_fixtures(args.out_dir, args.only)
    for name, path in written.items():
        print(f"{name:12s} {path}")
    print(
        f"wrote {len(written)} fixtures in {time.perf_counter() - start:.2f} s: paths.data_dir={args.out_dir} "
        "reads them (event and image fakes with FSNN_DATA_VERIFY=0)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
