r"""Planar Laplace noise on latitude/longitude (geo-indistinguishability, Andres et al. 2013).

The planar Laplace mechanism of Andres, Bordenabe, Chatzikokolakis and Palamidessi (CCS 2013,
section 4) releases :math:`z = x + N` with noise density
:math:`D_\epsilon(N) = \frac{\epsilon^2}{2\pi} e^{-\epsilon \lVert N \rVert}`: a uniform angle and
a radius with CDF

.. math:: C_\epsilon(r) = 1 - (1 + \epsilon r)\, e^{-\epsilon r},

the Gamma(2, 1/epsilon) law, whose inverse is
:math:`C_\epsilon^{-1}(p) = -\frac{1}{\epsilon}\left(W_{-1}\!\left(\frac{p - 1}{e}\right) + 1\right)`
(Lambert W, branch -1; :func:`radius_quantile`). For any output, the ratio of its densities from
two inputs is at most :math:`e^{\epsilon \lVert x - y \rVert}` (triangle inequality).

On lat/lon (:func:`planar_laplace`)
-----------------------------------
1. **Plane.** The inputs are mapped to the plane by :class:`geo.projection.LocalProjection`
   (azimuthal equidistant, centred on the area), whose distances are at most
   :math:`k_{max}` times the great-circle ones over the area; the noise level is
   :math:`\epsilon / k_{max}`, so the stated :math:`\epsilon` holds per great-circle km.
2. **Noise** of that level is drawn (below).
3. **Truncation** (Andres et al. 2013, section 5.2): an output outside the area's disk is moved
   radially onto its edge, a fixed map of the noisy point (post-processing).
4. **Discretisation**: the result is rounded to a grid of step ``grid_m`` metres in the plane
   and only the grid point's lat/lon is released (post-processing again).

Floating point (Mironov 2012). Mironov's attack reads the low-order bits of a released noisy
float: the set of reachable floats depends on the input. Here no noisy float is released:
outputs are points of one fixed grid, reached from every input, and each grid point's
probability is the sampler's mass in a grid cell (a square of positive area) shifted by the
input. What remains is how far the sampler's mass of a cell is from the exact integral. The
radius is drawn as the sum of two exponentials (Gamma(2)), each as
:math:`(K + F) / \epsilon` with :math:`K` geometric, drawn by Bernoulli(:math:`e^{-1}`) trials on
53-bit uniforms (relative error of each trial's probability below :math:`2^{-52}`, so of
:math:`P(K = k)` below :math:`k\,2^{-51}`, however deep the tail, where the inverse CDF of a
float uniform would be off by orders of magnitude) and :math:`F` the exponential truncated to
[0, 1) by inversion. The rounding of the angle, of ``cos``/``sin`` and of the sums moves a
sample by at most a few units in the last place of the coordinates, which changes the mass of a
cell by at most the mass of a strip of that width along its border. Over outputs inside the
area (inputs within its radius :math:`R`, distances at most :math:`2R`), these give the
relative error bound per cell

.. math:: \delta = 2^{-50}\left(2 \epsilon R + 16 \cdot 2R / u + 16\right),

with :math:`u` the grid step, and the guarantee
:math:`\Pr[z \mid x] \le e^{\epsilon d(x, y) + 2\delta} \Pr[z \mid y]`;
:attr:`PlanarLaplaceRelease.log_slack` reports :math:`2\delta` (about ``1e-9`` for a 50 km area
and a 1 m grid). The bound is an error analysis of the arithmetic, not a machine-checked proof;
the matrix family :mod:`geo.planar_laplace_family`, whose sampled distribution the toolkit
certifies exactly, is the choice when that matters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import lambertw

from mdp.errors import ParameterError, ParameterTypeError
from mdp.validation import check_epsilon, check_positive, check_rng

from .projection import LocalProjection

__all__ = ["radius_cdf", "radius_quantile", "sample_radius", "sample_planar_noise",
           "PlanarLaplaceSettings", "PlanarLaplaceRelease", "planar_laplace",
           "expected_displacement_km"]

_EXP_M1 = float(np.exp(-1.0))


def radius_cdf(r: ArrayLike, epsilon: float) -> np.ndarray:
    r"""CDF of the planar Laplace radius, :math:`C_\epsilon(r) = 1 - (1 + \epsilon r) e^{-\epsilon r}`.

    Andres et al. 2013, section 4.1 (km when ``epsilon`` is per km).
    """
    epsilon = check_epsilon(epsilon)
    x = epsilon * np.maximum(np.asarray(r, dtype=float), 0.0)
    return -np.expm1(-x) - x * np.exp(-x)


def radius_quantile(p: ArrayLike, epsilon: float) -> np.ndarray:
    r"""Radius holding a fraction ``p`` of the noise: :math:`C_\epsilon^{-1}(p)`.

    .. math:: C_\epsilon^{-1}(p) = -\frac{1}{\epsilon}\left(W_{-1}\!\left(\frac{p-1}{e}\right)
              + 1\right)

    (Andres et al. 2013, section 4.1; Lambert W by :func:`scipy.special.lambertw`). The 90%
    radius is ``3.89 / epsilon``, the 95% radius ``4.74 / epsilon``.
    """
    epsilon = check_epsilon(epsilon)
    q = np.asarray(p, dtype=float)
    if np.any(~np.isfinite(q) | (q < 0) | (q >= 1)):
        raise ParameterError(f"p must be in [0, 1), got {p!r}")
    w = lambertw((q - 1.0) / np.e, k=-1).real
    return np.where(q == 0, 0.0, -(w + 1.0) / epsilon)


def _geometric_trials(m: int, rng: np.random.Generator) -> np.ndarray:
    """``K`` with ``P(K = k) = (1 - q) q^k``, ``q = e^-1``, by Bernoulli trials (no tail cut-off)."""
    K = np.zeros(m, dtype=np.int64)
    active = np.arange(m)
    while active.size:
        go = rng.random(active.size) < _EXP_M1
        active = active[go]
        K[active] += 1
    return K


def sample_radius(m: int, epsilon: float, *, rng=None) -> np.ndarray:
    """``m`` planar Laplace radii (Gamma(2, 1/epsilon)) as two exponentials ``(K + F) / epsilon``.

    The integer parts come from Bernoulli trials, so the relative error of the sampled law stays
    below ``k 2^-51`` at ``k / epsilon`` however far in the tail (module docstring).
    """
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    m = int(m)
    K = _geometric_trials(2 * m, rng)
    F = -np.log1p(-rng.random(2 * m) * (1.0 - _EXP_M1))      # Exp(1) truncated to [0, 1)
    E = (K + F).reshape(2, m)
    return (E[0] + E[1]) / epsilon


def sample_planar_noise(m: int, epsilon: float, *, rng=None) -> np.ndarray:
    """``m`` planar Laplace noise vectors (m, 2): uniform angle, radius :func:`sample_radius`."""
    rng = check_rng(rng)
    r = sample_radius(m, epsilon, rng=rng)
    theta = rng.random(m) * (2 * np.pi)
    return np.c_[r * np.cos(theta), r * np.sin(theta)]


@dataclass(frozen=True)
class PlanarLaplaceSettings:
    """How :func:`planar_laplace` discretises, and the arithmetic slack it accepts.

    Attributes
    ----------
    grid_m : float
        Step of the output grid in metres (outputs are grid points; default 1 m).
    max_log_slack : float
        Largest additive log bound ``2 delta`` of the sampler's arithmetic (module docstring)
        a release may carry: a grid much finer than the floats' resolution over the area makes
        ``delta`` large, and such a release is refused (default ``1e-6``; a 1 m grid over the
        largest area, 9,007 km, gives ``5e-7``).
    """

    grid_m: float = 1.0
    max_log_slack: float = 1e-6

    def __post_init__(self) -> None:
        check_positive(self.grid_m, "grid_m")
        check_positive(self.max_log_slack, "max_log_slack")


@dataclass(frozen=True)
class PlanarLaplaceRelease:
    """Released locations and what holds for them.

    Attributes
    ----------
    latlon : ndarray (m, 2)
        Released (lat, lon), grid points of the area's plane.
    epsilon : float
        Stated level per great-circle km: ``Pr[z | x] <= exp(epsilon d(x, y) + log_slack) Pr[z | y]``.
    noise_epsilon : float
        Level of the planar noise, ``epsilon / scale_max``.
    scale_max : float
        Largest plane-to-sphere distance ratio over the area (:class:`LocalProjection`).
    area : LocalProjection
        The area (centre, radius); outputs are truncated to it.
    grid_km : float
        Output grid step (km).
    log_slack : float
        ``2 delta``: the sampler's arithmetic bound (module docstring).
    """

    latlon: np.ndarray
    epsilon: float
    noise_epsilon: float
    scale_max: float
    area: LocalProjection
    grid_km: float
    log_slack: float

    def describe(self) -> str:
        """The guarantee in one sentence with units."""
        return (f"For any two true locations x, y in the area (centre {self.area.lat:.5f}, "
                f"{self.area.lon:.5f}, radius {self.area.radius_km:.3g} km), each released "
                f"point is at most exp({self.epsilon:g} x d(x, y) in km + {self.log_slack:.1g}) "
                f"times as likely from x as from y (planar Laplace, Andres et al. 2013, noise "
                f"{self.noise_epsilon:.6g} per plane km, {self.grid_km * 1000:g} m grid).")


def planar_laplace(latlon: ArrayLike, epsilon: float, *, area: LocalProjection | None = None,
                   settings: PlanarLaplaceSettings = PlanarLaplaceSettings(),
                   rng=None) -> PlanarLaplaceRelease:
    r"""Release each (lat, lon) with planar Laplace noise, ``epsilon`` per great-circle km.

    Steps and the floating-point argument in the module docstring (Andres et al. 2013,
    sections 4-5; Mironov 2012).

    Parameters
    ----------
    latlon : array-like (m, 2) or (2,)
        True locations, degrees.
    epsilon : float
        Level per km (``level / radius`` in Location Guard's terms: ``ln 4 / 0.2`` is level
        ln 4 within 200 m).
    area : LocalProjection
        The public area the locations lie in (centre, radius), chosen without looking at them:
        outputs are truncated to it, so an area taken from the inputs themselves (the smallest
        cap around them) would release them. Required; its radius must be at least the noise's
        mean displacement ``2 k_max / epsilon``, or truncation, not noise, would decide the
        outputs.
    settings : PlanarLaplaceSettings
        Output grid.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    PlanarLaplaceRelease

    Raises
    ------
    mdp.errors.ParameterError
        Malformed coordinates, a location outside ``area`` (its position, never its
        coordinates), no ``area``, an area smaller than the noise, an invalid ``epsilon``, or a
        grid so fine that the arithmetic bound exceeds ``settings.max_log_slack``.
    """
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    if area is None:
        raise ParameterError("area is required: the public area the locations lie in, e.g. "
                             "geo.LocalProjection(lat, lon, radius_km) of the city, chosen "
                             "without looking at the locations (outputs are truncated to it, so "
                             "an area around the inputs would release them)")
    if not isinstance(area, LocalProjection):
        raise ParameterTypeError(f"area must be a geo.LocalProjection, got {type(area).__name__}")
    if not isinstance(settings, PlanarLaplaceSettings):
        raise ParameterTypeError(f"settings must be a PlanarLaplaceSettings, got "
                                 f"{type(settings).__name__}")
    k = area.scale_max
    eps0 = epsilon / k
    R = area.radius_km
    if R < expected_displacement_km(eps0):
        raise ParameterError(f"the area's radius {R:.4g} km is below the noise's mean "
                             f"displacement {expected_displacement_km(eps0):.4g} km at epsilon "
                             f"{epsilon:g} per km: most outputs would be moved onto the area's "
                             "edge, so the area, not the noise, would decide them. Use an area "
                             "that holds where your users may be, or a larger epsilon")
    u = settings.grid_m / 1000.0
    delta = 2.0 ** -50 * (2 * eps0 * R + 16 * 2 * R / u + 16)
    if 2 * delta > settings.max_log_slack:
        raise ParameterError(f"grid_m = {settings.grid_m:g} is too fine for a {R:.4g} km area: "
                             f"the sampler's arithmetic bound would be {2 * delta:.3g}, above "
                             f"max_log_slack = {settings.max_log_slack:g} (a 1 m grid gives at "
                             f"most {2 * 2.0 ** -50 * (2 * eps0 * R + 32 * R / 1e-3 + 16):.2g})")
    P = area.check_inside(latlon)
    Z = area.forward(P) + sample_planar_noise(len(P), eps0, rng=rng)
    rho = np.hypot(Z[:, 0], Z[:, 1])
    far = rho > area.radius_km
    Z[far] *= (area.radius_km / rho[far])[:, None]
    G = np.rint(Z / u) * u
    return PlanarLaplaceRelease(latlon=area.inverse(G), epsilon=epsilon, noise_epsilon=eps0,
                                scale_max=k, area=area, grid_km=u, log_slack=2 * delta)


def expected_displacement_km(epsilon: float) -> float:
    """Mean distance of planar Laplace noise, ``2 / epsilon`` (the Gamma(2) mean)."""
    return 2.0 / check_epsilon(epsilon)

