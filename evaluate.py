"""Re-test a finished run: ``python evaluate.py run_dir=results/train/<run> [checkpoint=best|last]``, the same as the
installed command ``fsnn-evaluate``; add ``study=energy`` for the layer-wise energy, ``robustness=events`` (vision) or
``robustness=graph`` (node classification) for the robustness study."""

from fsnn.suite.cli import evaluate

if __name__ == "__main__":
    evaluate()
