"""The compiled sparse unit triangular solves against SciPy's."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from mdp.lp.sparse_triangular import unit_lower_solve, unit_upper_solve


def _factor(seed: int, m: int = 60):
    rng = np.random.default_rng(seed)
    A = sp.random(m, m, density=0.08, random_state=rng, format="csr")
    A = (A + A.T + sp.eye(m) * m).tocsc()
    return spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                     options={"SymmetricMode": True}).L, rng


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("cols", [None, 1, 7])
def test_solves_equal_scipys(seed, cols):
    L, rng = _factor(seed)
    m = L.shape[0]
    b = rng.normal(size=m if cols is None else (m, cols))
    lower = L.tocsr()
    x = unit_lower_solve(lower, b)
    assert x.shape == b.shape
    np.testing.assert_allclose(x, spla.spsolve_triangular(lower, b, lower=True, unit_diagonal=True),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(L @ x, b, rtol=1e-10, atol=1e-10)
    upper = L.T.tocsr()
    y = unit_upper_solve(upper, b)
    np.testing.assert_allclose(upper @ y, b, rtol=1e-10, atol=1e-10)


def test_entries_on_the_other_side_are_ignored_and_b_is_kept():
    L, rng = _factor(5, 20)
    b = rng.normal(size=(20, 3))
    kept = b.copy()
    full = (L + L.T).tocsr()                  # the same lower part, an upper part besides
    np.testing.assert_allclose(unit_lower_solve(full, b), unit_lower_solve(L.tocsr(), b), rtol=1e-14)
    np.testing.assert_allclose(unit_upper_solve(full, b), unit_upper_solve(L.T.tocsr(), b), rtol=1e-14)
    np.testing.assert_array_equal(b, kept)


def test_wrong_shapes_are_refused():
    L, _ = _factor(1, 10)
    with pytest.raises(ValueError, match="square CSR"):
        unit_lower_solve(L.tocsr(), np.ones(9))
    with pytest.raises(ValueError, match="square CSR"):
        unit_lower_solve(L.tocsc(), np.ones(10))
