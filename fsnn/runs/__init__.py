"""The shared base of the commands and the reports: what a run is outside the training itself. Where the Hydra
configs are and every neuron's recipe switches (:mod:`~fsnn.runs.configs`, :mod:`~fsnn.runs.recipe_switches`), the
run records and the results folder (:mod:`~fsnn.runs.records`), what produced a result (:mod:`~fsnn.runs.provenance`),
how a command stops on a signal (:mod:`~fsnn.runs.interrupts`) and how a number reads (:mod:`~fsnn.runs.formatting`).

The suite (:mod:`fsnn.suite`) and the reports (:mod:`fsnn.report`) import it; it imports the library and its flat
modules, never the suite or the reports, and the library never imports it."""
