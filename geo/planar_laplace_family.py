r"""The ``planar_laplace`` family: planar Laplace remapped to a haversine space's points.

Importing this module registers the family with :func:`mdp.register` (it is declared in the
``mdp.families`` entry-point group, so ``mdp`` finds it without importing ``geo``).

The mechanism (Andres et al. 2013, sections 4 and 5.3 "remapping"): project the space's points
to the plane (:class:`geo.projection.LocalProjection`, azimuthal equidistant around the points,
plane distances at most ``k_max`` times great-circle ones), add planar Laplace noise of level
:math:`\epsilon_0 = (1 - m)\,\epsilon / k_{max}` and release the point of the space nearest to
the noisy point in the plane. Remapping is post-processing, so the exact transition matrix

.. math:: M[u, w] = \int_{\mathrm{Vor}(w)} \frac{\epsilon_0^2}{2\pi} e^{-\epsilon_0 \lVert z - x_u \rVert} dz

is :math:`\epsilon_0 k_{max}`-mDP for great-circle distances, below the stated ``epsilon``. The
margin ``m`` (:data:`NOISE_MARGIN`) absorbs the quadrature's error; the matrix is computed
(below) and then certified at ``epsilon`` by :class:`mdp.Mechanism` like every matrix family,
and sampled exactly from that certified matrix.

Computing M. Each Voronoi cell is a convex polygon (cells are clipped to a box ``40 /
epsilon_0`` beyond the points, outside which the noise has mass below ``1e-16``; rows are
normalised). For a convex polygon and a centre :math:`x`, with
:math:`S(\rho) = 1 - C(\rho) = (1 + \epsilon_0 \rho) e^{-\epsilon_0 \rho}` the radial survival
function, summing the triangles :math:`(x, a, b)` over the edges gives

.. math:: \Pr[z \in \mathrm{cell}] = [x \in \mathrm{cell}] - \frac{1}{2\pi} \sum_{(a, b)}
          \operatorname{sign}((a - x) \times (b - x)) \int_{s_a}^{s_b}
          S\!\left(\sqrt{h^2 + s^2}\right) \frac{h}{h^2 + s^2}\, ds,

where :math:`h` is the distance from :math:`x` to the edge's line and :math:`s` the position
along it (``d theta = h ds / rho^2``). Using :math:`S` rather than :math:`C` keeps far cells'
small masses free of cancellation, and scaling a cell's integrals by
:math:`e^{\epsilon_0 \rho_{min}}` (its distance from :math:`x`) keeps them from underflowing:
the matrix is built as log-probabilities. Each integral is split at the foot of the perpendicular and
into pieces on which :math:`\ln \rho / \ln 1.2 + \epsilon_0 \rho / 2` grows by at most one
(the piece ends come from Wright's omega function), with 8-point Gauss-Legendre on each piece.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import Voronoi
from scipy.special import logsumexp, wrightomega

from mdp.candidate import Candidate
from mdp.registry import register
from mdp.spaces.metric_space import MetricSpace

from .projection import LocalProjection

__all__ = ["voronoi_cells", "voronoi_masses", "voronoi_log_masses", "build_planar_laplace",
           "NOISE_MARGIN"]

#: Relative margin of the noise level below ``epsilon / k_max``: room for the quadrature's error
#: in the certification at ``epsilon`` (entries agree with the closed half-plane masses of two
#: points to 1e-13 relative; the margin is kept far above that for other geometries).
NOISE_MARGIN = 1e-3
_GL_X, _GL_W = np.polynomial.legendre.leggauss(8)
_PIECE_LOG_BASE = np.log(1.2)


def voronoi_cells(xy: np.ndarray, box: tuple[float, float, float, float]) -> list[np.ndarray]:
    """Counter-clockwise vertices of each point's Voronoi cell clipped to ``box``.

    ``box = (xmin, xmax, ymin, ymax)``; the points are mirrored across the four sides so that
    every original cell is bounded and its outer edges are the box's sides.
    """
    x0, x1, y0, y1 = box
    mirrors = [np.c_[2 * x0 - xy[:, 0], xy[:, 1]], np.c_[2 * x1 - xy[:, 0], xy[:, 1]],
               np.c_[xy[:, 0], 2 * y0 - xy[:, 1]], np.c_[xy[:, 0], 2 * y1 - xy[:, 1]]]
    vor = Voronoi(np.vstack([xy, *mirrors]))
    cells = []
    for i in range(len(xy)):
        V = vor.vertices[vor.regions[vor.point_region[i]]]
        ang = np.arctan2(V[:, 1] - xy[i, 1], V[:, 0] - xy[i, 0])
        cells.append(V[np.argsort(ang)])
    return cells


def _survival_integral(h: np.ndarray, lo: np.ndarray, hi: np.ndarray, eps: float,
                       ref: np.ndarray) -> np.ndarray:
    """``e^(eps ref) int_lo^hi S(sqrt(h^2 + s^2)) h / (h^2 + s^2) ds`` for ``0 <= lo <= hi``,
    ``h > 0`` and ``ref`` at most the smallest ``rho`` on the interval (so nothing overflows)."""
    a, b = 1.0 / _PIECE_LOG_BASE, eps / 2.0
    rho0, rho1 = np.hypot(h, lo), np.hypot(h, hi)
    g0, g1 = a * np.log(rho0) + b * rho0, a * np.log(rho1) + b * rho1
    pieces = np.maximum(np.ceil(g1 - g0).astype(np.int64), 1)
    owner = np.repeat(np.arange(len(h)), pieces)
    start = np.cumsum(pieces) - pieces
    k = np.arange(owner.size) - start[owner]
    frac0, frac1 = k / pieces[owner], (k + 1) / pieces[owner]

    def position(frac):
        g = g0[owner] + frac * (g1 - g0)[owner]
        rho = (a / b) * wrightomega(g / a + np.log(b / a)).real
        return np.sqrt(np.maximum(rho * rho - h[owner] ** 2, 0.0))

    s0, s1 = position(frac0), position(frac1)
    s0 = np.where(k == 0, lo[owner], s0)
    s1 = np.where(k == pieces[owner] - 1, hi[owner], s1)
    half, mid = (s1 - s0) / 2, (s1 + s0) / 2
    s = mid[:, None] + half[:, None] * _GL_X[None, :]
    hh = h[owner][:, None]
    r2 = hh * hh + s * s
    rho = np.sqrt(r2)
    f = (1.0 + eps * rho) * np.exp(-eps * (rho - ref[owner][:, None])) * hh / r2
    return np.bincount(owner, weights=half * (f @ _GL_W), minlength=len(h))


def voronoi_masses(xy: np.ndarray, epsilon: float) -> np.ndarray:
    """``M[u, w]``: planar Laplace mass (level ``epsilon``) around ``xy[u]`` in ``w``'s cell.

    ``exp`` of :func:`voronoi_log_masses` (masses below ~1e-308 underflow to 0).
    """
    with np.errstate(under="ignore"):
        return np.exp(voronoi_log_masses(xy, epsilon))


def voronoi_log_masses(xy: np.ndarray, epsilon: float, centres: np.ndarray | None = None
                       ) -> np.ndarray:
    """Natural logs of :func:`voronoi_masses`, finite however far the cells.

    Formula in the module docstring, each cell's integrals scaled by ``e^(epsilon rho_min)``
    (``rho_min`` the distance from the input to the cell), so that a cell ``epsilon d = 5000``
    away has log-mass about ``-5000`` instead of an underflowed 0; rows normalised (the mass
    beyond the clipping box, below ``1e-16``, is dropped). ``centres`` (m, 2): the noise's
    centres, one row each (None: the points ``xy`` themselves; other centres are raw locations,
    :mod:`geo.raw_locations`).
    """
    xy = np.asarray(xy, dtype=float)
    n = len(xy)
    C = xy if centres is None else np.asarray(centres, dtype=float)
    own = (np.arange(n) if centres is None
           else np.argmin(((C[:, None, :] - xy[None, :, :]) ** 2).sum(axis=2), axis=1))
    margin = 40.0 / epsilon
    box = (min(xy[:, 0].min(), C[:, 0].min()) - margin, max(xy[:, 0].max(), C[:, 0].max()) + margin,
           min(xy[:, 1].min(), C[:, 1].min()) - margin, max(xy[:, 1].max(), C[:, 1].max()) + margin)
    cells = voronoi_cells(xy, box)
    A = np.vstack(cells)
    B = np.vstack([np.roll(c, -1, axis=0) for c in cells])
    cell_of_edge = np.repeat(np.arange(n), [len(c) for c in cells])
    d = B - A
    length = np.hypot(d[:, 0], d[:, 1])
    keep = length > 0
    A, B, d, length, cell_of_edge = A[keep], B[keep], d[keep], length[keep], cell_of_edge[keep]
    unit = d / length[:, None]
    L = np.zeros((len(C), n))
    for u in range(len(C)):
        pa, pb = A - C[u], B - C[u]
        cross = pa[:, 0] * pb[:, 1] - pa[:, 1] * pb[:, 0]
        h = np.abs(cross) / length
        sa = np.einsum("ij,ij->i", pa, unit)
        sb = sa + length
        # distance from xy[u] to each edge, then to each cell (0 for its own cell)
        near = np.where((sa < 0) & (sb > 0), h, np.hypot(h, np.minimum(np.abs(sa), np.abs(sb))))
        ref = np.full(n, np.inf)
        np.minimum.at(ref, cell_of_edge, near)
        ref[own[u]] = 0.0
        ok = h > 1e-12 * (1.0 + np.abs(sa) + length)
        sign = np.sign(cross)[ok]
        h, sa, sb, owner = h[ok], sa[ok], sb[ok], cell_of_edge[ok]
        # split [sa, sb] at the foot s = 0 into intervals of |s|
        lo1, hi1 = np.where(sa >= 0, sa, np.where(sb <= 0, -sb, 0.0)), np.where(sa >= 0, sb, -sa)
        both = (sa < 0) & (sb > 0)
        hs = np.r_[h, h[both]]
        lo = np.r_[lo1, np.zeros(both.sum())]
        hi = np.r_[hi1, sb[both]]
        ref_i = np.r_[ref[owner], ref[owner][both]]
        total = _survival_integral(hs, lo, hi, epsilon, ref_i)
        per_edge = total[:h.size]
        per_edge[both] += total[h.size:]
        scaled = -np.bincount(owner, weights=sign * per_edge, minlength=n) / (2 * np.pi)
        scaled[own[u]] += 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            L[u] = np.where(scaled > 0, np.log(scaled), -np.inf) - epsilon * ref
    return L - logsumexp(L, axis=1, keepdims=True)


def _applies(space: MetricSpace) -> str | None:
    if space.metric != "haversine" or space.points is None or space.points.shape[1] != 2:
        return "planar Laplace needs a haversine space of (lat, lon) points"
    return None


@register("planar_laplace", description="planar Laplace noise (Andres et al. 2013) remapped to the "
          "nearest point, on haversine (lat, lon) spaces", applies=_applies, quick_max_n=300,
          display_name="Planar Laplace")
def build_planar_laplace(space: MetricSpace, epsilon: float, *, rng=None) -> Candidate:
    """The remapped planar Laplace matrix of the module docstring (``epsilon`` per km)."""
    area = LocalProjection.around(space.points)
    k = area.scale_max
    eps0 = (1.0 - NOISE_MARGIN) * epsilon / k
    L = voronoi_log_masses(area.forward(space.points), eps0)
    return Candidate(log_matrix=L, stats={"noise_epsilon": eps0, "scale_max": k,
                                      "projection_centre": [area.lat, area.lon],
                                      "projection_radius_km": area.radius_km})
