"""Builds that record the ``mdp.AccuracyWarning`` they emit, for tests that check exactly which
builds miss their target (``stats["target_met"]``) and say so."""

import warnings

import mdp


def build_recording(name, space, eps, **params):
    """``(mechanism, messages)``: ``mdp.build(name, space, eps, **params)`` and the messages of
    every ``mdp.AccuracyWarning`` it emitted (each one recorded, even when repeated)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", mdp.AccuracyWarning)
        mech = mdp.build(name, space, eps, **params)
    return mech, [str(w.message) for w in caught if issubclass(w.category, mdp.AccuracyWarning)]
