#!/usr/bin/env python
"""Write the reproduction report page, ``results/report/index.html`` (see :mod:`fsnn.report`): a verdict per table
from the runs, the figures ``scripts/figures.py`` drew, the tables not run here with their estimates, provenance.

    python scripts/report.py [--results results] [--out results/report] [--figures results/figures]
                             [--bench results/bench]
"""

from fsnn.report import main

if __name__ == "__main__":
    raise SystemExit(main())
