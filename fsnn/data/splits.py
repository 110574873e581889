"""The seeded, stratified splitter that carves validation (and test) samples from a dataset's labels."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fsnn.checks import round_count


def stratified_split(labels, fractions: Sequence[float], seed: int) -> tuple[np.ndarray, ...]:
    """Split indices ``0..n-1`` into ``len(fractions) + 1`` parts, stratified by label: part ``j`` takes a share
    ``fractions[j]`` of the samples and the last part keeps the rest (``val, train = stratified_split(y, [0.1], s)``;
    ``val, test, train = stratified_split(y, [0.2, 0.1], s)``). Returns the parts' indices, each sorted ascending.

    The parts are cut one after another from each class's seeded permutation. The first ``j + 1`` parts together
    hold ``round(F * n)`` samples (``F`` the sum of their fractions, rounded half up by
    :func:`fsnn.checks.round_count`; at least one for each part with a positive fraction and one for the rest, when
    ``n`` allows): each class ``c`` of ``n_c`` members gives ``floor(F * n_c)``, and what the total still lacks goes
    one sample each to the classes with the largest fractional parts (ties broken by the seeded generator),
    preferring classes that keep at least one member for the rest. So each class's count in the first part and in
    the rest is within one sample of its share. The result depends only on ``labels`` (in their given order),
    ``fractions`` and ``seed``.
    """
    labels = np.asarray(labels)
    n = len(labels)
    fractions = [float(f) for f in fractions]
    if not fractions or min(fractions) < 0.0 or not sum(fractions) < 1.0:
        raise ValueError(f"split fractions must be >= 0 with a sum below 1, got {fractions!r}")
    if n == 0:
        return tuple(np.arange(0) for _ in range(len(fractions) + 1))
    rng = np.random.default_rng(seed)
    classes, inverse = np.unique(labels, return_inverse=True)
    counts = np.bincount(inverse, minlength=len(classes))
    cuts, cut, share = [], np.zeros(len(classes), dtype=np.int64), 0.0
    for j, fraction in enumerate(fractions):
        share += fraction
        total = round_count(share, n)
        if n >= 2:  # leave one sample for every later part with a positive fraction and for the rest
            least = int(cut.sum()) + (fraction > 0)
            total = min(max(total, least), n - 1 - sum(f > 0 for f in fractions[j + 1 :]))
        quota = share * counts
        cut = np.maximum(np.floor(quota).astype(np.int64), cut)
        remainder = total - int(cut.sum())
        tie_break = rng.random(len(classes))
        order = np.lexsort((tie_break, -(quota - np.floor(quota))))
        for min_room in (2, 1):  # first never empty a class on the rest side, then fill up if still short
            for c in order:  # largest fractional part first
                if remainder <= 0:
                    break
                if counts[c] - cut[c] >= min_room:
                    cut[c] += 1
                    remainder -= 1
        cuts.append(cut)
    parts = [[] for _ in range(len(fractions) + 1)]
    for c in range(len(classes)):
        members = rng.permutation(np.flatnonzero(inverse == c))
        bounds = [0, *(int(cut[c]) for cut in cuts), len(members)]
        for part, start, stop in zip(parts, bounds[:-1], bounds[1:]):
            part.append(members[start:stop])
    return tuple(np.sort(np.concatenate(part)) for part in parts)
