"""Train a spiking network: ``python train.py dataset=<name> backbone=<name> neuron=<name> [key=value ...]``, the same
as the installed command ``fsnn-train``.

With no arguments it runs the offline default (digits_dvs + small DVSNet + f-LIF). See docs/getting-started.md.
"""

from fsnn.suite.cli import train

if __name__ == "__main__":
    train()
