"""A hyperparameter chosen on validation (fsnn.report.selection), on hand-made runs: the best mean validation metric
over the seeds every value has, never the test metric; in the link-prediction table, the tuned GAE rows."""

from __future__ import annotations

import pytest
from helpers import paper_spec, table_cell, table_record

from fsnn.report import table_formats, tables
from fsnn.report.selection import select_on_validation


def _run(lr, seed, val, test, **config):
    """A tuned GAE run on Photo: learning rate ``lr``, validation AUC ``val``, test AUC ``test`` (fractions)."""
    run = table_record("lp_gae_tuned", f"lr{lr}_s{seed}", "photo", "gae", "if", seed, test, metric="auc")
    run["val_auc_best"] = val
    run["config"].update({"optimizer": {"lr": lr}, "recipe_switch": "none", **config})
    run["config"]["backbone"] = {"name": "gae", "encoder": "gcn"}
    return run


def _select(runs):
    return select_on_validation(runs, "optimizer.lr", tables._lookup)


def test_the_value_of_best_mean_validation_is_chosen_whatever_its_test():
    runs = [
        *(_run(0.01, s, v, 0.99) for s, v in enumerate([0.90, 0.92])),  # the best test, not the best validation
        *(_run(0.005, s, v, 0.80) for s, v in enumerate([0.93, 0.94])),
        *(_run(0.001, s, v, 0.85) for s, v in enumerate([0.91, 0.92])),
    ]
    selection, chosen = _select(runs)
    assert selection.value == 0.005 and {r["run"] for r in chosen} == {"lr0.005_s0", "lr0.005_s1"}
    assert [(c.value, c.n) for c in selection.candidates] == [(0.001, 2), (0.005, 2), (0.01, 2)]
    assert [c.val_mean for c in selection.candidates] == pytest.approx([0.915, 0.935, 0.91])
    assert selection.seeds == (0, 1)
    assert selection.text("lr") == "lr 0.005 of 0.001, 0.005, 0.01 on validation (91.50, 93.50, 91.00; seeds 0, 1)"


def test_values_are_compared_on_the_seeds_they_all_have():
    # seeds 3 and 4 run at 0.01 only (n = 5 at a chosen value): they do not change the choice made on seeds 0-2
    runs = [
        *(_run(0.01, s, v, 0.9) for s, v in enumerate([0.90, 0.90, 0.90, 0.99, 0.99])),
        *(_run(0.001, s, 0.91, 0.9) for s in range(3)),
    ]
    selection, chosen = _select(runs)
    assert selection.value == 0.001 and selection.seeds == (0, 1, 2) and len(chosen) == 3
    assert [c.n for c in selection.candidates] == [3, 3]
    # with no seed in common, every run counts
    selection, chosen = _select([_run(0.01, 0, 0.90, 0.9), _run(0.001, 1, 0.80, 0.9)])
    assert selection.value == 0.01 and selection.seeds == () and "all runs" in selection.text("lr")


def test_a_tie_goes_to_the_first_value_and_runs_without_the_key_or_a_validation_take_no_part():
    no_val = _run(0.1, 0, 0.99, 0.9)
    no_val["val_auc_best"] = None
    no_key = _run(0.2, 0, 0.99, 0.9)
    del no_key["config"]["optimizer"]
    selection, chosen = _select([_run(0.01, 0, 0.9, 0.5), _run(0.001, 0, 0.9, 0.6), no_val, no_key])
    assert selection.value == 0.001 and [c.value for c in selection.candidates] == [0.001, 0.01]
    assert _select([no_val, no_key]) == (None, [])


def test_the_tuned_gae_rows_show_the_chosen_rates_runs_and_their_epochs():
    runs = [
        *(_run(0.01, s, 0.90, 0.99, early_stopping={"patience": 100}) for s in range(3)),
        *(_run(0.005, s, 0.95, 0.93 + 0.01 * s, early_stopping={"patience": 100}) for s in range(3)),
    ]
    for run, epochs in zip(runs, [2000, 2000, 2000, 300, 412, 905]):
        run.update(epochs=epochs, early_stopping={"patience": 100})
    untuned = table_record("lp_gae_reference", "old", "photo", "gae", "if", 0, 0.89, metric="auc")
    untuned["config"]["recipe_switch"] = "none"
    other_encoder = _run(0.01, 0, 0.99, 0.5)
    other_encoder["config"]["backbone"]["encoder"] = "linear"
    table = tables.build_table(paper_spec("link_prediction"), [*runs, untuned, other_encoder])
    cell = table_cell(table, "GAE, two-layer GCN encoder, tuned on validation, matched split", "Photos")
    assert cell["n"] == 3 and cell["mean"] == pytest.approx(94.0) and not cell["mixed"]
    text = table_formats.cell_text(cell)
    assert "[lr 0.005 of 0.005, 0.01 on validation (95.00, 90.00; seeds 0-2)]" in text
    assert "[early stopping: median 412 epochs, 300-905]" in text
    linear = table_cell(table, "GAE, linear encoder, tuned on validation, matched split", "Photos")
    assert linear["n"] == 1 and linear["mean"] == pytest.approx(50.0)
    old = table_cell(table, "GAE, two-layer GCN encoder, 200 epochs at lr 0.01 (not tuned), matched split", "Photos")
    assert old["n"] == 1 and old["mean"] == pytest.approx(89.0) and "early stopping" not in table_formats.cell_text(old)
