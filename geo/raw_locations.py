r"""Guarantees on raw coordinates: planar Laplace drawn from the true location, then a remap.

A user's location is not a point of the mechanism's space. Every matrix mechanism first locates
it to a point (:func:`geo.locations.locate`), and for raw ``x, y`` the bound is then
``exp(eps (d(x, y) + s))``, ``s`` twice the snapping threshold or one cell diagonal
(:mod:`geo.explain`): at distance zero two raw locations on either side of a cell border are
``e^{eps s}`` apart, not 1.

:class:`RawPlanarLaplace` has no such term. It projects the raw location with the azimuthal
equidistant projection of a cap that holds the space's points and every location within the
snapping threshold of them (:class:`geo.projection.LocalProjection`; plane distances at most
``k_max`` times great-circle ones), adds planar Laplace noise of level
``eps_0 = (1 - m) eps / k_max`` (Andres et al. 2013, section 4; exact sampler of
:mod:`geo.planar_laplace`) and releases a point of the space chosen from the noisy point alone:

* ``remap="nearest"``: the point nearest to it in the plane (Andres et al. 2013, section 5.3);
* ``remap="bayes"``: the point of least expected loss under a prior over the space's points,
  :math:`\arg\min_{x'} \sum_x \pi_x\, e^{-\epsilon_0 \lVert z - P(x) \rVert} d(x, x')`
  (Chatzikokolakis, ElSalamouny, Palamidessi 2017, section 4).

Either remap is post-processing of the noisy point, whose density ratio between raw locations
``x, y`` in the cap is at most ``exp(eps_0 ||P(x) - P(y)||) <= exp(eps d(x, y))``: the guarantee
is ``eps`` per km on the coordinates themselves. It is a theorem, not a certified matrix; the
sampler is tested against the exact cell masses (:func:`voronoi_log_masses` with raw centres).

:func:`off_grid_violation_rate` measures how often the snapping mechanisms break ``exp(eps d)``
between raw locations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import cKDTree

from mdp.errors import ParameterError
from mdp.mechanism import Mechanism
from mdp.prior import Prior
from mdp.spaces.metric_space import MetricSpace, haversine_km
from mdp.validation import check_epsilon, check_rng

from .locations import (
    cell_diagonal_km,
    check_geo_space,
    check_latlon,
    describe_positions,
    locate,
    snap_threshold_km,
)
from .planar_laplace import sample_planar_noise
from .planar_laplace_family import NOISE_MARGIN, voronoi_log_masses
from .projection import LocalProjection

__all__ = ["RawPlanarLaplace", "REMAPS", "off_grid_violation_rate", "raw_mechanism"]

#: How a noisy point becomes a point of the space.
REMAPS = ("nearest", "bayes")

#: Noisy points remapped at once by the Bayes remap (an ``m x n`` block and its ``m x n`` costs).
_BAYES_BLOCK = 2048


@dataclass
class RawPlanarLaplace:
    r"""``eps``-geo-indistinguishable release of raw (lat, lon) locations as points of a space.

    Parameters
    ----------
    space : MetricSpace
        A haversine space of (lat, lon) points (the outputs).
    epsilon : float
        Per km, on the raw coordinates.
    remap : {"nearest", "bayes"}, default "nearest"
    prior : Prior or None
        The prior of ``remap="bayes"`` (None: uniform).
    margin_km : float or None
        How far beyond the points raw locations are accepted (None:
        :func:`geo.locations.snap_threshold_km`, what the snapping mechanisms accept).

    Attributes
    ----------
    area : LocalProjection
        The cap raw locations must lie in.
    noise_epsilon : float
        ``eps_0 = (1 - NOISE_MARGIN) eps / k_max``.
    """

    space: MetricSpace
    epsilon: float
    remap: str = "nearest"
    prior: Prior | None = None
    margin_km: float | None = None
    area: LocalProjection = field(init=False)
    noise_epsilon: float = field(init=False)

    def __post_init__(self) -> None:
        pts = check_geo_space(self.space)
        self.epsilon = check_epsilon(self.epsilon)
        if self.remap not in REMAPS:
            raise ParameterError(f"remap must be one of {REMAPS}, got {self.remap!r}")
        if self.remap == "bayes":
            self.prior = (Prior.uniform(self.space.n) if self.prior is None
                          else self.prior.check_space(self.space.n))
        elif self.prior is not None:
            raise ParameterError("prior is used by remap='bayes' only")
        margin = snap_threshold_km(self.space) if self.margin_km is None else float(self.margin_km)
        if not (np.isfinite(margin) and margin >= 0):
            raise ParameterError(f"margin_km must be a finite number >= 0, got {self.margin_km!r}")
        self.area = LocalProjection.around(pts, margin_km=margin)
        self.noise_epsilon = (1.0 - NOISE_MARGIN) * self.epsilon / self.area.scale_max
        self._xy = self.area.forward(pts)
        self._tree = cKDTree(self._xy)

    @property
    def guarantee(self) -> str:
        return (f"{self.epsilon:.6g} per km on raw coordinates within {self.area.radius_km:.3g} km "
                f"of ({self.area.lat:.4f}, {self.area.lon:.4f}), no additive term (planar Laplace "
                f"from the raw location, then the {self.remap} remap)")

    def remap_points(self, Z: np.ndarray) -> np.ndarray:
        """Indices of the space's points the noisy plane points ``Z`` (m, 2) are released as."""
        if self.remap == "nearest":
            return self._tree.query(Z)[1].astype(np.int64)
        D = np.asarray(self.space.distances, dtype=float)
        logpi = np.log(self.prior.probabilities)
        out = np.empty(len(Z), dtype=np.int64)
        for s in range(0, len(Z), _BAYES_BLOCK):
            z = Z[s:s + _BAYES_BLOCK]
            r = np.sqrt(((z[:, None, :] - self._xy[None, :, :]) ** 2).sum(axis=2))
            logw = logpi - self.noise_epsilon * r
            W = np.exp(logw - logw.max(axis=1, keepdims=True))      # posterior up to a factor
            out[s:s + len(z)] = np.argmin(W @ D, axis=1)
        return out

    def inside(self, latlon: ArrayLike) -> np.ndarray:
        """Whether each raw location lies in the area of the guarantee (bool, (m,))."""
        return self.area.contains(check_latlon(latlon))

    def check_inside(self, latlon: ArrayLike, names: list[str] | None = None) -> np.ndarray:
        """Raw locations as an (m, 2) array; one outside the area of the guarantee raises,
        naming its position (``names``: how messages name each location, default
        ``"input K"``), never its coordinates."""
        P = check_latlon(latlon)
        out = np.flatnonzero(~self.area.contains(P))
        if out.size:
            raise ParameterError(
                f"{describe_positions(names, out, len(P))}: outside the area of the mechanism's raw-"
                f"location guarantee (within {self.area.radius_km:.3f} km of its centre: the "
                "points and the snapping threshold around them). Build a mechanism on a space "
                "that covers them")
        return P

    def privatize_indices(self, latlon: ArrayLike, *, rng=None,
                          names: list[str] | None = None) -> np.ndarray:
        """Indices of the released points for raw locations (m, 2); locations outside the area
        raise (:meth:`check_inside`)."""
        rng = check_rng(rng)
        P = self.check_inside(latlon, names)
        Z = self.area.forward(P) + sample_planar_noise(len(P), self.noise_epsilon, rng=rng)
        return self.remap_points(Z)

    def privatize(self, latlon: ArrayLike, *, rng=None) -> np.ndarray:
        """Released points (m, 2) (lat, lon) for raw locations (m, 2)."""
        return np.asarray(self.space.points)[self.privatize_indices(latlon, rng=rng)]

    def output_log_probabilities(self, latlon: ArrayLike) -> np.ndarray:
        """Exact ``log Pr[output = w | raw x]`` (m, n) of the nearest remap (the planar Laplace
        masses of the points' plane Voronoi cells around each raw location)."""
        if self.remap != "nearest":
            raise ParameterError("exact output probabilities are computed for remap='nearest'")
        P = self.check_inside(latlon)
        return voronoi_log_masses(self._xy, self.noise_epsilon, centres=self.area.forward(P))


def raw_mechanism(mech: Mechanism) -> RawPlanarLaplace | None:
    """The raw-coordinates release of ``mech`` when its family allows one (``planar_laplace``:
    the same noise drawn from the raw location), else None."""
    if getattr(mech, "name", None) == "planar_laplace" and getattr(mech, "kind", "") == "matrix":
        return RawPlanarLaplace(mech.space, mech.epsilon)
    return None


def _paired_haversine_km(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Great-circle distances between ``X[i]`` and ``Y[i]`` (km)."""
    step = 512
    return np.concatenate([np.diagonal(haversine_km(X[s:s + step], Y[s:s + step]))
                           for s in range(0, len(X), step)]) if len(X) else np.zeros(0)


def off_grid_violation_rate(mech: Mechanism, *, pairs: int = 20000, near_km: float | None = None,
                            rng=None) -> dict:
    r"""How often a snapping mechanism breaks ``exp(eps d(x, y))`` between raw locations.

    Draws ``pairs`` raw locations ``x`` uniformly in the points' bounding box among those the
    mechanism accepts (within the snapping threshold of a point), and ``y`` uniformly within
    ``near_km`` of ``x`` (None: one cell diagonal on a grid space, else twice the snapping
    threshold: where snapping matters; ``inf``: ``y`` drawn as ``x``, the random pairs of AIPO
    2026), locates both (:func:`geo.locations.locate`) and counts the pairs whose exact
    worst output ratio ``max_w K[u, w] / K[v, w]`` exceeds ``exp(eps d(x, y))``.

    Returns
    -------
    dict with ``rate`` (violating fraction), ``pairs``, ``near_km``, ``worst_excess`` (largest
    ``log ratio - eps d`` over the pairs), ``bound_slack_km`` and ``standard_error``.
    """
    rng = check_rng(rng)
    space = mech.space
    pts = check_geo_space(space)
    limit = snap_threshold_km(space)
    cell = cell_diagonal_km(space)
    near = (2 * limit if cell is None else cell) if near_km is None else float(near_km)
    with np.errstate(divide="ignore"):
        L = np.log(np.asarray(mech.matrix, dtype=float))
    lo, hi = pts.min(axis=0), pts.max(axis=0)

    def accepted(m: int) -> tuple[np.ndarray, np.ndarray]:
        """``m`` uniform locations of the box that the mechanism accepts, and their points."""
        X, idx = np.empty((0, 2)), np.empty(0, dtype=np.int64)
        while len(X) < m:
            cand = lo + rng.random((2 * m, 2)) * (hi - lo)
            at = locate(space, cand, far="mark")
            X, idx = np.r_[X, cand[at >= 0]], np.r_[idx, at[at >= 0]]
        return X[:m], idx[:m]

    X, u = accepted(pairs)
    if np.isinf(near):
        Y, v = accepted(pairs)                    # both ends uniform over the accepted area
    else:
        # y: a uniform point of the disc of radius `near` around x (small: local flat metric)
        r = near * np.sqrt(rng.random(pairs))
        t = rng.random(pairs) * 2 * np.pi
        Y = np.c_[X[:, 0] + r * np.cos(t) / 111.195,
                  X[:, 1] + r * np.sin(t) / (111.195 * np.cos(np.radians(X[:, 0])))]
        v = locate(space, Y, far="mark")
    keep = (u >= 0) & (v >= 0)
    X, Y, u, v = X[keep], Y[keep], u[keep], v[keep]
    d = _paired_haversine_km(X, Y)
    with np.errstate(invalid="ignore"):
        ratio = np.where(u == v, 0.0, np.nanmax(L[u] - L[v], axis=1))
    excess = ratio - mech.epsilon * d
    rate = float(np.mean(excess > 1e-9))
    return {"rate": rate, "pairs": int(len(X)), "near_km": near,
            "worst_excess": float(excess.max()), "bound_slack_km": 2 * limit,
            "standard_error": float(np.sqrt(rate * (1 - rate) / max(len(X), 1)))}
