#!/usr/bin/env python
"""Write the reproduction report page, ``results/report/index.html`` (see :mod:`fsnn.report`).

    python scripts/report.py [--results results] [--out results/report] [--figures results/figures]
"""

from fsnn.report import main

if __name__ == "__main__":
    raise SystemExit(main())
