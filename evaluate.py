"""Re-test a finished run: ``python evaluate.py run_dir=results/train/<run> [checkpoint=best|last]``; add
``study=energy`` for the layer-wise energy, ``robustness=events`` (vision) or ``robustness=graph`` (node
classification) for the robustness study."""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from fsnn.app import run_guarded
from fsnn.commandline import check_command_line
from fsnn.studies import evaluate

CONF = Path(__file__).resolve().parent / "conf"


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    run_guarded(evaluate, cfg)


if __name__ == "__main__":
    check_command_line(CONF, "eval")  # a typo: one line and exit 2, before Hydra makes anything
    main()
