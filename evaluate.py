"""Re-test a finished run: ``python evaluate.py run_dir=results/train/<run> [checkpoint=best|last]``;
add ``robustness=events`` (vision) or ``robustness=graph`` (node classification) for the robustness study."""

import hydra
from omegaconf import DictConfig

from fsnn.app import evaluate, run_guarded


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    run_guarded(evaluate, cfg)


if __name__ == "__main__":
    main()
