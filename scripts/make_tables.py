"""Print the paper's tables beside ours and write them to results/tables/ (Markdown + LaTeX).

Same as ``python -m fsnn.tables``; see ``fsnn/tables.py`` and ``experiments/paper_tables.yaml``.
"""

from fsnn.tables import main

if __name__ == "__main__":
    raise SystemExit(main())
