"""Privatize user inputs with a saved mechanism (the ``mdp privatize`` command).

Inputs are labels or indices of the space. Richer kinds of input lines (``lat,lon`` lines for
geographic spaces, free text for word spaces) are handled by :class:`~mdp.plugins.InputFormat`
plugins of the packages that own them (:data:`mdp.plugins.INPUTS`, entry-point group
``mdp.inputs``): the first format that accepts the lines privatizes them.
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .mechanism import Mechanism
from .plugins import INPUTS
from .release import check_utf8, csv_cell
from .validation import check_rng

__all__ = ["privatize_inputs", "parse_items"]


def parse_items(mech: Mechanism, inputs: list[str]) -> list:
    """Labels of the space, or indices written as integers ``0 .. n-1``.

    A token that is a label is taken as the label (labels win over indices). On a location
    space (haversine) without labels a lone number is refused rather than taken as an index:
    it is far more likely a location typed wrong than a point chosen by its position.

    Raises
    ------
    ParameterError
        For a token that is neither; the message gives its position (1-based) and the valid
        range, never the token itself (inputs are private).
    """
    space = mech.space
    labels = set(np.asarray(space.labels).astype(str)) if space.labels is not None else set()
    out = []
    for k, s in enumerate(inputs, start=1):
        if s in labels:
            out.append(int(space.index_of(s)))
            continue
        if not labels and space.metric == "haversine":
            raise ParameterError(f"input {k}: not a lat,lon location (a location space takes "
                                 "'lat,lon' lines, not indices)")
        try:
            i = int(s)
        except ValueError:
            i = None
        if i is None or not 0 <= i < space.n:
            if labels:
                raise ParameterError(f"input {k}: unknown label: not a label of the space nor "
                                     f"an index in 0..{space.n - 1}")
            raise ParameterError(f"input {k}: not an index in 0..{space.n - 1}")
        out.append(i)
    return out


def privatize_inputs(mech: Mechanism, inputs: list[str], *, rng=None, **options) -> list[str]:
    """One output line per input line.

    Labels come out as CSV cells (:func:`mdp.release.csv_cell`: quoted when they hold a comma,
    line breaks escaped, spreadsheet formulas neutralised). An input that is not valid UTF-8
    (undecodable bytes read from standard input) is refused with
    :class:`~mdp.errors.ParameterError` naming its line.

    Parameters
    ----------
    mech : Mechanism
    inputs : list of str
        Labels, indices, or lines of a plugin input format.
    rng : None, int or numpy.random.Generator
    **options
        Options of the input formats (e.g. ``max_snap_km`` and ``snap`` for locations, ``oov``
        for text); each format receives those it declares, ``None`` values are left out. A
        format that declares an option given here (not None) takes labelled inputs even when
        they are single labels (``--oov mask`` applies to one word as to a sentence).
    """
    for k, line in enumerate(inputs):
        check_utf8(line, f"input line {k + 1}")
    rng = check_rng(rng)
    given = {k for k, v in options.items() if v is not None}
    for _, fmt in INPUTS.items():
        # an option only this format takes (``oov`` for text), given by name, selects it too
        asked = mech.space.labels is not None and bool(given & set(fmt.options))
        if inputs and (asked or fmt.accepts(mech, inputs)):
            mine = {k: v for k, v in options.items() if k in fmt.options and v is not None}
            return fmt.privatize(mech, inputs, rng=rng, **mine)
    out = mech.sample_indices(np.asarray(parse_items(mech, inputs), dtype=np.int64), rng)
    # a label is one CSV cell on one line, whatever it holds (commas, line breaks, "=...")
    return [csv_cell(o) for o in mech.space.label_of(out)] if mech.space.labels is not None \
        else [str(int(o)) for o in out]
