"""Privatize user inputs with a saved mechanism (the ``mdp privatize`` command).

Inputs are labels or indices of the space. Two richer input kinds are dispatched to their
domain modules: ``lat,lon`` lines for geographic spaces (:mod:`geo.locations`) and free text for
word spaces (:mod:`text.privatize`).
"""

from __future__ import annotations

import re

from .mechanism import Mechanism
from .validation import check_rng

__all__ = ["privatize_inputs"]

_LATLON = re.compile(r"^\s*[-+]?\d+(\.\d*)?\s*,\s*[-+]?\d+(\.\d*)?\s*$")


def privatize_inputs(mech: Mechanism, inputs: list[str], *, rng=None,
                     oov: str = "error") -> list[str]:
    """One output line per input line.

    ``oov`` is the policy of :func:`text.privatize` for words of a text line that are not in the
    space; the default refuses them (nothing is released unprotected).
    """
    rng = check_rng(rng)
    space = mech.space
    if space.metric == "haversine" and inputs and all(_LATLON.match(s) for s in inputs):
        from geo.locations import privatize_latlon_lines

        return privatize_latlon_lines(mech, inputs, rng=rng)
    if space.labels is not None and any(len(s.split()) > 1 for s in inputs):
        from text.privatize import privatize

        return [privatize(s, mech, rng=rng, oov=oov) for s in inputs]
    out = mech.sample(inputs if space.labels is not None else [int(s) for s in inputs], rng=rng)
    return [str(o) for o in out]
