"""Loading a saved mechanism, verified from first principles (:func:`load`).

Loading dispatches on the stored family name through the registry (:mod:`mdp.registry`), which
builds on :mod:`mdp.mechanism`; so loading sits above both, in a module of its own.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from .errors import (
    BuildError,
    FileFormatError,
    ParameterTypeError,
    PrivacyError,
    WeakPrivacyWarning,
)
from .io import npz_json, read_npz
from .mechanism import READABLE_VERSIONS, Mechanism
from .prior.remap import REMAP_SUFFIX
from .privacy.provenance import check_points_source
from .privacy.weak_epsilon import weak_privacy_message
from .registry import get, vocabulary_class
from .spaces.stored import space_from_file

__all__ = ["load", "LOAD_WORK_FACTOR"]


#: Copies of a mechanism file's arrays that loading holds at once (the arrays, the certified
#: matrix, the sampler's tables).
LOAD_WORK_FACTOR = 4


def _warn_if_weak(path: Path, mech):
    """The weak-epsilon check of a build, run again on what was loaded (:mod:`mdp.privacy.weak_epsilon`)."""
    message = weak_privacy_message(mech.space, mech.epsilon)
    if message:
        warnings.warn(f"{path}: {message}", WeakPrivacyWarning, stacklevel=3)
    return mech


def _load_vocabulary(path: Path, data: dict):
    """A vocabulary-mode file (points or the words of a named embedding, no matrix): re-created
    through its family's class, whose constructor recomputes the guarantee
    (:mod:`mdp.vocabulary.mode`)."""
    meta = npz_json(data, "metadata", path)
    if meta.get("mode") != "vocabulary":
        raise FileFormatError(path, "a mechanism file holds 'distances' (matrix mode) or "
                                    "metadata mode 'vocabulary'")
    try:
        name = meta["name"]
        float(meta["epsilon"])
        cls = vocabulary_class(name) if isinstance(name, str) else None
    except (KeyError, TypeError, ValueError) as exc:
        raise FileFormatError(path, f"corrupt metadata ({exc})") from None
    if cls is None:
        raise FileFormatError(path, f"mechanism family {name!r} has no vocabulary mode")
    try:
        return _warn_if_weak(path, cls.from_file(path, data, meta))
    except PrivacyError as exc:
        raise PrivacyError(f"{path}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, f"invalid mechanism ({exc})") from None


def load(path: str | os.PathLike, *, max_memory: int | None = None) -> Mechanism:
    """Load a mechanism written by :meth:`Mechanism.save`, verified from first principles.

    Nothing the file says about privacy is trusted: the family's class (and so its kind of
    guarantee) comes from the registry entry of the stored family name, the distances are
    recomputed from the stored points and metric, and the mechanism is re-created through its
    constructor, which certifies the stored matrix (without repair: a stored matrix that needs
    repair is refused) or, for analytic families, re-derives the noise from ``epsilon``. A
    vocabulary-mode file (points, no matrix) gives a
    :class:`~mdp.vocabulary.mode.VocabularyMechanism` whose guarantee is recomputed from the
    points and ``epsilon``. The points of a file made from a named embedding are checked
    against the installed embedding (:mod:`mdp.privacy.provenance`), and the weak-epsilon check of a
    build runs again (:mod:`mdp.privacy.weak_epsilon`).

    Parameters
    ----------
    path : path-like
    max_memory : int or None, keyword-only
        Limit in bytes on what loading holds (:data:`LOAD_WORK_FACTOR` times the arrays' sizes
        as the file declares them), checked before any array is read; None: half the
        machine's memory (:func:`mdp.runtime.resources.default_max_memory`).

    Raises
    ------
    mdp.errors.MissingFileError
        No file at ``path`` (also a ``FileNotFoundError``).
    mdp.errors.ResourceLimitError
        The file's arrays are declared larger than ``max_memory`` allows.
    mdp.errors.FileFormatError
        The file is missing pieces, corrupt, of an unknown family, its distances disagree
        with its points, or its vectors are not those of the embedding it names (the message
        names the file).
    mdp.errors.PrivacyError
        The stored matrix fails its privacy check (message names the file).

    Warns
    -----
    mdp.errors.UnverifiedPointsWarning
        The file's points (other than locations) name no embedding that could be checked: its
        guarantee is relative to the points in the file.
    mdp.errors.WeakPrivacyWarning
        Epsilon leaves no meaningful privacy on the file's space.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"path must be a file path (str or os.PathLike), got "
                                 f"{type(path).__name__}")
    path = Path(path)
    data = read_npz(path, required=("metadata",),
                    allowed=("matrix", "log_matrix", "distances", "metadata", "labels", "points",
                             "log_weights"),
                    what="mechanism file", max_memory=max_memory, work_factor=LOAD_WORK_FACTOR)
    if "distances" not in data:
        return _load_vocabulary(path, data)
    if ("matrix" in data) == ("log_matrix" in data):
        raise FileFormatError(path, "a mechanism file holds exactly one of 'matrix' and "
                                    "'log_matrix'")
    meta = npz_json(data, "metadata", path)
    try:
        name = meta["name"]
        float(meta["epsilon"])  # must be a number; the constructor validates its range
        if not isinstance(name, str):
            raise TypeError(f"family name must be a string, got {name!r}")
        params = meta.get("params") or {}
        if not isinstance(params, dict):
            raise TypeError(f"params must be an object, got {params!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise FileFormatError(path, f"corrupt metadata ({exc})") from None
    if meta.get("format_version") not in READABLE_VERSIONS:
        raise FileFormatError(path, f"unsupported format version {meta.get('format_version')!r}")
    if name == "custom" or name.endswith(REMAP_SUFFIX):
        # a hand-made matrix, or a remap of a family's matrix: certified as any matrix
        cls = Mechanism
    else:
        try:
            cls = get(name).mechanism_class
        except ValueError:
            raise FileFormatError(path, f"unknown mechanism family {name!r}") from None
    space = space_from_file(path, data, meta)
    check_points_source(path, space, meta)
    try:
        if "log_matrix" in data:
            return _warn_if_weak(path, cls._from_saved(data["log_matrix"], space, meta, log=True))
        return _warn_if_weak(path, cls._from_saved(data["matrix"], space, meta))
    except PrivacyError as exc:
        raise PrivacyError(f"{path}: stored matrix fails its privacy check: {exc}") from None
    except BuildError as exc:
        raise BuildError(f"{path}: {exc}") from None
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, f"invalid mechanism ({exc})") from None
