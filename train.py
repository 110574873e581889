"""Train a spiking network: ``python train.py dataset=<name> backbone=<name> neuron=<name> [key=value ...]``.

With no arguments it runs the offline default (digits_dvs + small DVSNet + f-LIF). See README.md.
"""

import hydra
from omegaconf import DictConfig, OmegaConf

from fsnn.app import run_dir_name, run_guarded, train

OmegaConf.register_new_resolver("run_dir", run_dir_name, replace=True)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig) -> float:
    return run_guarded(train, cfg)


if __name__ == "__main__":
    main()
