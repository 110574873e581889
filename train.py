"""Train a spiking network: ``python train.py dataset=<name> backbone=<name> neuron=<name> [key=value ...]``.

With no arguments it runs the offline default (digits_dvs + small DVSNet + f-LIF). See README.md.
"""

from pathlib import Path

import hydra
from omegaconf import DictConfig

from fsnn.app import register_resolvers, run_guarded, train
from fsnn.commandline import check_command_line

CONF = Path(__file__).resolve().parent / "conf"
register_resolvers()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    return run_guarded(train, cfg)


if __name__ == "__main__":
    check_command_line(CONF, "config")  # a typo: one line and exit 2, before Hydra makes anything
    main()
