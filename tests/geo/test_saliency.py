"""geo.saliency: MIT saliency benchmark metrics on inputs with closed forms."""

import numpy as np
import pytest
from scipy.stats import entropy, pearsonr

from geo.saliency import KL_EPS, cc, emd, kl, sim
from mdp.emd import emd_grid

P = np.array([[1.0, 2.0], [3.0, 4.0]])
Q = np.array([[4.0, 3.0], [2.0, 1.0]])


def test_cc_known_values():
    assert cc(P, Q) == pytest.approx(-1.0)
    assert cc(P, 2 * P + 1) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    a, b = rng.random((9, 9)), rng.random((9, 9))
    assert cc(a, b) == pytest.approx(pearsonr(a.ravel(), b.ravel())[0], rel=1e-12)
    assert np.isnan(cc(np.ones((3, 3)), a[:3, :3]))


def test_sim_closed_form_minmax_variant():
    # Min-max: P -> [[0,1/3],[2/3,1]] / 2, Q -> [[1,2/3],[1/3,0]] / 2; sum of minima = 1/3.
    assert sim(P, Q) == pytest.approx(1 / 3)
    assert sim(P, P) == pytest.approx(1.0)
    # Min-max makes SIM invariant to affine rescaling of either map.
    assert sim(3 * P + 5, Q) == pytest.approx(sim(P, Q))
    # Disjoint supports share nothing.
    assert sim(np.array([[1.0, 0], [0, 0]]), np.array([[0, 0], [0, 1.0]])) == 0.0


def test_kl_closed_form():
    g, s = Q / Q.sum(), P / P.sum()
    closed = 0.3 * np.log(4) + 0.1 * np.log(1.5)
    assert kl(P, Q) == pytest.approx(closed, rel=1e-12)
    assert kl(P, Q) == pytest.approx(entropy(g.ravel(), s.ravel()), rel=1e-12)
    assert abs(kl(P, 5 * P)) < 1e-12
    # A zero in the estimate where the truth has mass: finite, dominated by log(1/eps).
    est = np.array([[0.0, 1.0], [1.0, 1.0]])
    truth = np.array([[1.0, 0.0], [0.0, 0.0]])
    assert kl(est, truth) == pytest.approx(np.log(KL_EPS + 1 / KL_EPS), rel=1e-12)


def test_kl_regularisation_constant_by_hand():
    # truth (1/2, 1/2, 0, 0), estimate (0, 1/2, 1/4, 1/4): the first cell is missed mass.
    est = np.array([[0.0, 2.0], [1.0, 1.0]])
    truth = np.array([[1.0, 1.0], [0.0, 0.0]])
    for c in (KL_EPS, 1e-9, 1e-3):
        by_hand = 0.5 * np.log(c + 0.5 / c) + 0.5 * np.log(c + 0.5 / (0.5 + c))
        assert kl(est, truth, eps=c) == pytest.approx(by_hand, rel=1e-12)
    assert kl(est, truth) == kl(est, truth, eps=KL_EPS)
    # the missed half costs about 0.5 log(0.5 / c): 17.6 nats at MATLAB eps, 3.1 at 1e-3
    assert kl(est, truth) == pytest.approx(0.5 * np.log(0.5 / KL_EPS), rel=1e-9)
    with pytest.raises(ValueError, match="eps"):
        kl(est, truth, eps=0.0)


def test_emd_metric():
    a = np.zeros((64, 64))
    b = np.zeros((64, 64))
    a[0, 0] = b[63, 63] = 1
    # Downsample by 32 -> 2 x 2 blocks; one diagonal step.
    assert emd(a, b) == pytest.approx(np.sqrt(2))
    assert emd(a, b, downsample=1, ground="l1") == pytest.approx(126.0)
    assert emd(P, Q, downsample=1, ground="l1") == pytest.approx(emd_grid(P, Q))


@pytest.mark.parametrize("metric", [sim, cc, kl, emd])
def test_metrics_reject_bad_input(metric):
    with pytest.raises(ValueError, match="same shape"):
        metric(P, np.ones((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        metric(P, np.full((2, 2), np.nan))


def test_kl_rejects_negative():
    with pytest.raises(ValueError, match="non-negative"):
        kl(-P, Q)
