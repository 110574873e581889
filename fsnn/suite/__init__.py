"""The reproduction suite: the Hydra commands (``fsnn-train``, ``fsnn-evaluate``), config validation, the run
lifecycle (folders, locks, checkpoints, resumption, signals), the tasks and their Lightning modules, and the studies
run on a finished run. It builds on the neuron library, :mod:`fsnn.models` and :mod:`fsnn.data`; the reports
(:mod:`fsnn.report.page`) read what it writes without importing it."""
