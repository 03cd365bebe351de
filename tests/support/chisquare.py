"""Chi-square goodness of fit of sampled counts against a distribution (cells pooled)."""

from __future__ import annotations

import numpy as np
from scipy import stats


def pooled_chisquare(counts, probs) -> float:
    """p-value of ``counts`` against ``probs``, the cells of expected count below 5 pooled into
    one (the test's usual validity rule); with one possible cell left, 1.0 when every draw is
    in it and 0.0 otherwise."""
    counts = np.asarray(counts)
    n = counts.sum()
    expected = np.asarray(probs, dtype=float) * n
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    if len(obs) < 2:
        return 1.0 if obs.sum() == n else 0.0
    return float(stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue)
