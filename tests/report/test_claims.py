"""The paper's claims decided from runs (fsnn.report.claims): the interval, the detectable difference and the
decision on hand-made numbers, and the claims a built table holds."""

from __future__ import annotations

import math

import pytest
from helpers import T2, run_record

from fsnn.report import claims, tables, verdicts


def test_welch_interval_and_detectable_difference_by_hand():
    # both sides: variance 1, n = 3 -> SE = sqrt(2/3), Welch-Satterthwaite nu = (2/3)^2 / (2 (1/3)^2 / 2) = 4;
    # t(0.975; 4) = 2.776445, t(0.8; 4) = 0.940965
    diff, low, high, detectable = claims.welch([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    se = (2 / 3) ** 0.5
    assert diff == pytest.approx(1.0)
    assert (low, high) == pytest.approx((1.0 - 2.776445 * se, 1.0 + 2.776445 * se), abs=1e-5)
    assert detectable == pytest.approx((2.776445 + 0.940965) * se, abs=1e-5)
    # unequal spreads and sizes: nu from Welch-Satterthwaite, not n_a + n_b - 2
    va, vb = 2.5 / 5, 1 / 3  # variance of 1..5 over n = 5; of (0, 1, 2) over n = 3
    nu = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 2)
    _, low, high, _ = claims.welch([1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 2.0])
    from scipy.stats import t

    assert high - low == pytest.approx(2 * t.ppf(0.975, nu) * (va + vb) ** 0.5)


@pytest.mark.parametrize(
    "a, b, claim, verdict, reason",
    [
        ([1, 2, 3], [0, 1, 2], 5.0, "rejected", "the claimed +5.00 lies above the 95% interval [-1.27, +3.27]"),
        ([1, 2, 3], [0, 1, 2], 2.0, "inconclusive", "contains both 0 and the claimed +2.00"),
        ([10, 11, 12], [0, 1, 2], 10.0, "confirmed", "contains the claimed +10.00 and excludes 0"),
        ([10, 11, 12], [0, 1, 2], 5.0, "rejected", "the claimed +5.00 lies below"),
        ([0, 1, 2], [10, 11, 12], -10.0, "confirmed", "excludes 0"),  # a claim that the baseline is ahead
        ([2, 2.5], [1, 1], 1.0, "inconclusive", "contains both 0"),  # one constant side: the other's spread
        # the direction alone
        ([10, 11, 12], [0, 1, 2], None, "confirmed", "lies above 0"),
        ([0, 1, 2], [10, 11, 12], None, "rejected", "holds no positive difference"),
        ([1, 2, 3], [0, 1, 2], None, "inconclusive", "contains 0"),
        # runs that cannot carry a decision: refused, with the reason
        ([1], [0, 1, 2], 5.0, "not decided", "fewer than 2 runs on a side (n = 1 and 3)"),
        ([80, 80], [70, 70], 10.0, "not decided", "no spread"),  # copies of one run: no zero-width "confirmed"
        ([80, 80], [70, 70], None, "not decided", "no spread"),
        ([1, 2, float("nan")], [0, 1, 2], None, "not decided", "1 of the 6 values are not finite"),
        ([1, 2, 3], [0, 1, float("inf")], 1.0, "not decided", "not finite"),
        ([10, 11, 12], [0, 1, 2], float("nan"), "not decided", "the claimed difference (nan) is not a finite"),
        ([1e308, -1e308, 1e308], [0, 1, 2], None, "not decided", "too large"),  # the variance overflows
    ],
)
def test_decide(a, b, claim, verdict, reason):
    decision = claims.decide(a, b, claim)
    assert decision.verdict == verdict
    assert reason in decision.reason
    assert decision.claim == claim or math.isnan(claim)
    assert (decision.n_a, decision.n_b) == (len(a), len(b))


def test_decide_without_an_interval_keeps_the_difference():
    decision = claims.decide([0.9], [0.8, 0.7])
    assert decision.diff == pytest.approx(0.15) and decision.low is None and decision.detectable is None
    nan = claims.decide([1.0, float("nan")], [0.0, 1.0])
    assert nan.diff is None and nan.low is None  # no number is made of a NaN
    assert claims.welch([80, 80], [70, 70]) is None and claims.welch([1e308, -1e308], [0, 1]) is None


def test_tally_counts_what_cannot_be_decided():
    found = [{"size": claims.decide([80, 80], [70, 70], 5.0)}, {"size": claims.decide([1, 2, 3], [0, 1, 2], 5.0)}]
    assert claims.tally(found) == {"confirmed": 0, "rejected": 1, "inconclusive": 0, "not decided": 1}
    sentence = verdicts.claims_sentence([{**entry, "fractional": "f-LIF"} for entry in found])
    assert "1 of 2 rejected, 0 confirmed, 0 inconclusive, 1 not decided (95% Welch" in sentence


def _table(runs, table_id=T2.replace("table2_", "")):
    spec = next(s for s in tables.load_spec() if s["id"] == table_id)
    for i, run in enumerate(runs):
        run["_path"] = f"/r/{i}/metrics.json"
    return spec, tables.build_table(spec, runs)


def test_claims_of_table2_pair_the_fractional_neuron_with_each_first_order_one():
    runs = [
        run_record(T2, f"{n}{s}", dataset, "sgcn", n, s, acc + 0.001 * s)
        for dataset in ("cora", "photo")
        for n, acc in (("flif", 0.86), ("sj_lif", 0.85), ("lif", 0.85))
        for s in range(3)
    ]
    spec, table = _table(runs)
    found = claims.claims(spec, table)
    pairs = [(c["setting"], c["baseline"]) for c in found]
    # Photo's f-LIF cell is fsnn LIF's runs (alpha = 1.0): no pair of a cell with itself; Cora has both baselines
    assert pairs == [
        ("Cora / SGCN", "LIF (SpikingJelly)"),
        ("Cora / SGCN", "LIF (fsnn, alpha = 1)"),
        ("Photo / SGCN", "LIF (SpikingJelly)"),
    ]
    cora_sj, cora_lif = found[0], found[1]
    assert cora_sj["paper"] == [88.08, 81.81] and cora_sj["size"].claim == pytest.approx(6.27)
    assert cora_sj["size"].diff == pytest.approx(1.0)
    assert cora_lif["size"] is None and cora_lif["beats"].verdict == "confirmed"  # no paper value: direction only
    assert claims.tally(found) == {"confirmed": 0, "rejected": 2, "inconclusive": 0, "not decided": 0}
    text = claims.claims_markdown(table, found)
    # std 0.1 points on each side: SE = 0.1 sqrt(2/3), nu = 4, half-width 2.776 SE = 0.23, detectable 3.717 SE = 0.30
    assert (
        "| Cora / SGCN | LIF (SpikingJelly) | 3 / 3 | +1.00 | [+0.77, +1.23] | +6.27 | 0.30 | rejected | confirmed |"
        in text
    )
    assert "| Cora / SGCN | LIF (fsnn, alpha = 1) | 3 / 3 | +1.00 |" in text and "not claimed" in text


def test_a_study_row_names_the_paper_cells_it_tests():
    """The recipe ablation is not in the paper; its "as published" row tests Table 2's Cora claim (claim_of), and
    its other rows test nothing."""
    task = "recipe_ablation_cora"
    runs = []
    for switch in ("published", "none"):
        for n, acc in (("flif", 0.88), ("sj_lif", 0.80)):
            for s in range(3):
                run = run_record(task, f"{switch}{n}{s}", "cora", "sgcn", n, s, acc + 0.002 * s)
                run["choices"] = {"recipe_switch": f"{n}/{switch}"}
                run["config"]["recipe_switch"] = switch
                runs.append(run)
    spec, table = _table(runs, task)
    found = claims.claims(spec, table, tables.load_spec())
    assert [(c["setting"], c["paper"]) for c in found] == [("Cora / SGCN, published", [88.08, 81.81])]
    assert found[0]["size"].verdict == "rejected"  # +8 against the claimed +6.27, at zero spread
    got = verdicts.verdict(spec, table, tables.load_spec())
    assert "The paper's claimed gaps (f-LIF - baseline): 1 of 1 rejected, 0 confirmed, 0 inconclusive" in got["short"]
