"""The robustness study's side of the corruptions: a plan's corruption checked before any data is loaded, and the
paper's robustness score.

Paper: appendix "Extended Robustness Experiments" (``robustness``) defines the robustness score; the corruptions
themselves, their levels and units are :mod:`fsnn.data.corruptions`. :func:`check_corruption` validates a name, its
levels and options on a dummy input before any data is loaded. ``evaluate.py robustness=...`` (the robustness study
of :mod:`fsnn.suite.studies`) runs the study on a trained run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from fsnn.data.corruptions import CORRUPTIONS, family_corruption

__all__ = ["check_corruption", "robustness_score"]


def _dummy_graph():
    from torch_geometric.data import Data

    return Data(x=torch.ones(3, 2), edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]))


def check_corruption(family: str, name: str, levels, options: Mapping | None = None) -> list[float]:
    """Validate one corruption of a robustness study before any data is loaded; returns the levels as floats.

    ``name`` must be a corruption of ``family``, ``levels`` must be a non-empty list of numbers, and the corruption
    is run once per level with ``options`` on a tiny dummy input, so a bad level (a ratio above 1, a negative std) or
    an unknown option fails here with the corruption's own message. Raises ``ValueError``.
    """
    fn = family_corruption(family, name)
    if isinstance(levels, (str, bytes)) or not isinstance(levels, Sequence) or not levels:
        raise ValueError(f"{name}: levels must be a non-empty list of numbers, got {levels!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in levels):
        raise ValueError(f"{name}: levels must be numbers, got {list(levels)!r}")
    options = dict(options or {})
    for level in levels:
        try:
            if family == "vision":
                fn(torch.ones(2, 1, 2, 2), level, 0, **options)
            elif CORRUPTIONS.meta(name).probe:
                if options:
                    raise TypeError(f"takes no options, got {sorted(options)}")
                fn(level)
            else:
                fn(_dummy_graph(), level, 0, **options)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name} at level {level!r}: {error}") from None
    return [float(v) for v in levels]


def robustness_score(
    clean_acc: float, accs_by_level: Sequence[float] | Mapping[float, float], weights: Sequence[float] | None = None
) -> float:
    """The paper's robustness score of one model under one corruption type, in ``[0, 100]`` (can exceed 100 if
    a corrupted accuracy beats the clean one).

    Appendix "Extended Robustness Experiments", "Neuromorphic Data Classification Tasks" (unnumbered
    ``align*`` equation)::

        Final Score_j = sum_{i=1}^{N} w_i * Performance_{i,j} / Original Performance_j * 100,

    with "equal weights to all corruption conditions, i.e. w_i = 1/N, where N is the total number of corruption
    conditions" - i.e. 100 x mean(acc_i) / clean_acc. ``accs_by_level``: accuracies at the N levels (a sequence,
    or a ``{level: acc}`` mapping; the clean level is *not* included). ``weights``: optional ``w_i`` (same order;
    the paper's choice, 1/N each, when omitted; given weights are used as is, not renormalised).

    Check against the paper: Tables ``tab:discard``, ``tab:temporal_jitter``, ``tab:temporal_truncate`` and
    ``tab:occlude_block`` reproduce to the printed 2 decimals (+-0.01 from the rounded accuracies), e.g. f-SNN
    frame discard: 100 * mean(0.9236, 0.9062, 0.9062, 0.8993, 0.8646) / 0.9480 = 94.93. Table ``tab:noise`` does
    not (f-SNN gives 97.58 vs. the printed 95.96, SJ 85.65 vs. 78.81): an inconsistency in the paper's table.
    """
    clean = float(clean_acc)
    if not math.isfinite(clean) or clean <= 0.0:
        raise ValueError(f"clean_acc must be a finite number > 0, got {clean_acc!r}")
    accs = [float(a) for a in (accs_by_level.values() if isinstance(accs_by_level, Mapping) else accs_by_level)]
    n = len(accs)
    if n == 0:
        raise ValueError("accs_by_level is empty")
    if weights is None:
        w = [1.0 / n] * n
    else:
        w = [float(v) for v in weights]
        if len(w) != n:
            raise ValueError(f"got {len(w)} weights for {n} corruption levels")
    return float(sum(wi * a / clean for wi, a in zip(w, accs)) * 100.0)
