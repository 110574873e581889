"""Write tiny fake copies of the vision and graph datasets in their real on-disk formats: ``python scripts/make_fixtures.py OUT_DIR``.

``OUT_DIR`` can then be passed as ``paths.data_dir``. The logic lives in :mod:`fsnn.data.fixtures`.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from fsnn.data.fixtures import FIXTURE_NAMES, write_fixtures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="folder to write into (used as data_dir)")
    parser.add_argument("--only", nargs="+", choices=FIXTURE_NAMES, metavar="NAME",
                        help=f"subset of {', '.join(FIXTURE_NAMES)}")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    written = write_fixtures(args.out_dir, args.only)
    for name, path in written.items():
        print(f"{name:12s} {path}")
    print(f"wrote {len(written)} fixtures in {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
