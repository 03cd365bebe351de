r"""What a location mechanism's epsilon means, in metres.

Location Guard and GeoPrivacy state geo-indistinguishability as a *level* ``l`` within a
*radius* ``r``: two locations ``r`` apart are at most ``e^l`` times more or less likely to give
any output, so ``epsilon = l / r`` (Andres et al. 2013, section 3.2; Location Guard's levels are
set at 200 m, 500 m and 2 km). :func:`explain` turns a mechanism on a haversine space
(distances in km, epsilon per km) into that statement and into accuracy figures computed from its
certified matrix:

* the **expected displacement** (mean great-circle distance between an input and its output:
  the row losses of Imola et al. 2022, eq. 3), averaged over the space's points and at worst;
* the **radius holding 90% and 95%** of outputs: per input, the smallest radius around it whose
  disc holds that fraction of its output distribution (median and worst over inputs), and over
  inputs, the same for all outputs pooled with every point of the space equally likely;
* **raw locations**: the guarantee holds between the space's points; a raw location is first
  located to a point (:func:`geo.locations.locate`), so for raw ``x, y`` located to ``u, v`` the
  bound is ``exp(epsilon (d(x, y) + s))`` with ``s`` twice the snapping threshold (a location
  outside the space's cells is snapped from up to that far; one cell diagonal where both lie
  inside cells of a grid space); ``s = 0`` for ``planar_laplace``, whose noise is drawn from the
  raw location (:mod:`geo.raw_locations`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from mdp.errors import ParameterError
from mdp.mechanism import Mechanism
from mdp.plugins import Explainer

from .locations import cell_diagonal_km, snap_threshold_km
from .raw_locations import raw_mechanism

__all__ = ["Explanation", "explain", "radius_holding", "LOCATION_GUARD_RADII_KM", "EXPLAINER"]

#: Radii at which Location Guard states its levels (km).
LOCATION_GUARD_RADII_KM = (0.2, 0.5, 2.0)


def radius_holding(matrix: np.ndarray, distances: np.ndarray, q: float) -> np.ndarray:
    """Per input ``u``: the smallest ``d(u, w)`` with ``sum_{w': d(u, w') <= d(u, w)} M[u, w'] >= q``."""
    order = np.argsort(distances, axis=1, kind="stable")
    D = np.take_along_axis(distances, order, axis=1)
    cum = np.cumsum(np.take_along_axis(matrix, order, axis=1), axis=1)
    k = np.argmax(cum >= q * cum[:, -1:] * (1 - 1e-12), axis=1)
    return D[np.arange(len(D)), k]


def _pooled_radius(matrix: np.ndarray, distances: np.ndarray, q: float) -> float:
    d = distances.ravel()
    w = matrix.ravel() / matrix.shape[0]
    order = np.argsort(d, kind="stable")
    cum = np.cumsum(w[order])
    return float(d[order][np.argmax(cum >= q * cum[-1] * (1 - 1e-12))])


def _km(x: float) -> str:
    return f"{x * 1000:.0f} m" if x < 1 else f"{x:.3g} km"


@dataclass(frozen=True)
class Explanation:
    """A location mechanism's guarantee and accuracy in km (see the module docstring).

    Attributes
    ----------
    epsilon : float
        Per km.
    levels : dict[float, float]
        ``{radius_km: epsilon * radius_km}`` at Location Guard's radii.
    mean_displacement_km, worst_displacement_km : float
        Expected distance input -> output, averaged over inputs / at the worst input.
    radius_90_km, radius_95_km : dict[str, float]
        ``{"median input": .., "worst input": .., "over inputs": ..}``.
    raw_slack_km : float
        Added to raw locations' distance: twice the snapping threshold (a location outside the
        space's cells may be snapped from that far), 0 where the family draws from the raw
        location.
    raw_slack_kind : str
        ``"cell diagonal"``, ``"twice the snapping threshold"``, or ``"none"`` where the family
        draws from the raw location (``planar_laplace``, :mod:`geo.raw_locations`).
    n : int
    family : str
    cell_slack_km : float or None
        On a grid space, the smaller term between two locations inside the space's cells (one
        cell diagonal).
    """

    epsilon: float
    levels: dict
    mean_displacement_km: float
    worst_displacement_km: float
    radius_90_km: dict
    radius_95_km: dict
    raw_slack_km: float
    raw_slack_kind: str
    n: int
    family: str
    cell_slack_km: float | None = None

    def sentence(self) -> str:
        """The guarantee in one sentence with units."""
        r = LOCATION_GUARD_RADII_KM[1]
        return (f"For any two locations d km apart, every output of this mechanism is at most "
                f"exp({self.epsilon:.4g} x d) times as likely from one as from the other: "
                f"level {self.epsilon * r:.3g} within {_km(r)} (at most "
                f"{np.exp(self.epsilon * r):.3g} times), epsilon = {self.epsilon:.4g} per km.")

    def text(self) -> str:
        """Every figure, one per line."""
        lv = ", ".join(f"{level:.3g} within {_km(r)}" for r, level in self.levels.items())
        lines = [self.sentence(),
                 f"levels (epsilon x radius, as Location Guard states them): {lv}",
                 f"expected displacement: {_km(self.mean_displacement_km)} on average over the "
                 f"{self.n} points, {_km(self.worst_displacement_km)} at the worst point"]
        for q, rad in ((90, self.radius_90_km), (95, self.radius_95_km)):
            lines.append(f"{q}% of outputs within: {_km(rad['median input'])} of the input "
                         f"(median input), {_km(rad['worst input'])} (worst input), "
                         f"{_km(rad['over inputs'])} over all inputs")
        if self.raw_slack_kind == "none":
            lines.append(f"raw locations: the noise is drawn from the raw location itself, so for "
                         f"any locations x, y in the area the bound is exp({self.epsilon:.4g} x "
                         f"d(x, y)), with no additive term")
        else:
            lines.append(f"raw locations (not points of the space): for locations x, y the bound "
                         f"is exp({self.epsilon:.4g} x (d(x, y) + {self.raw_slack_km:.3g} km)): "
                         f"{self.raw_slack_kind} added to their distance"
                         + ("" if self.cell_slack_km is None else
                            f" ({self.cell_slack_km:.3g} km, one cell diagonal, for two "
                            f"locations inside the space's cells)"))
        return "\n".join(lines)

    def record(self) -> dict:
        """The figures as one JSON-ready record (``mdp explain --json``)."""
        out = dataclasses.asdict(self)
        out["levels"] = {str(k): v for k, v in self.levels.items()}
        out["sentence"] = self.sentence()
        return out


def explain(mech: Mechanism) -> Explanation:
    """Explain ``mech`` (on a haversine space of (lat, lon) points; epsilon per km).

    Raises
    ------
    mdp.errors.ParameterError
        The mechanism is not on a haversine (lat, lon) space.
    """
    space = mech.space
    if space.metric != "haversine" or space.points is None:
        raise ParameterError(f"explain needs a mechanism on a haversine (lat, lon) space, got "
                             f"metric {space.metric!r}")
    M = np.asarray(mech.matrix, dtype=float)
    D = np.asarray(space.distances, dtype=float)
    losses = np.asarray(mech.row_losses(), dtype=float)
    radii = {}
    for q in (0.9, 0.95):
        per = radius_holding(M, D, q)
        radii[q] = {"median input": float(np.median(per)), "worst input": float(per.max()),
                    "over inputs": _pooled_radius(M, D, q)}
    cell = cell_diagonal_km(space)
    if raw_mechanism(mech) is not None:
        slack, kind = 0.0, "none"
    else:
        # a location outside the space's cells is snapped from up to the threshold away, so
        # over every location the command accepts the term is twice the threshold (on a grid
        # the threshold is at least one cell diagonal, the term between locations in cells)
        slack, kind = 2 * snap_threshold_km(space), "twice the snapping threshold"
    eps = float(mech.epsilon)
    return Explanation(epsilon=eps, levels={r: eps * r for r in LOCATION_GUARD_RADII_KM},
                       mean_displacement_km=float(losses.mean()),
                       worst_displacement_km=float(losses.max()),
                       radius_90_km=radii[0.9], radius_95_km=radii[0.95], raw_slack_km=slack,
                       raw_slack_kind=kind, n=space.n, family=mech.name,
                       cell_slack_km=None if cell is None or kind == "none" else cell)


def _is_location(mech) -> bool:
    space = mech.space
    return (getattr(space, "metric", None) == "haversine"
            and getattr(space, "points", None) is not None and hasattr(mech, "matrix"))


#: ``mdp explain`` of a location mechanism, in the ``mdp.explainers`` entry-point group.
EXPLAINER = Explainer(accepts=_is_location, explain=explain)
