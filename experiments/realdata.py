"""The real data sets an experiment reads (Geolife, Gowalla), announced before any work starts.

Experiments that read the real data say so on stderr before they start, and stop at once, with
the folders looked in and where to get the data, when the data are absent (docs/guide/data.md).
A ``--quick`` run of an experiment on the Gowalla check-ins runs instead on a seeded synthetic
log (:mod:`geo.synthetic_checkins`), says so on stderr and in its summary, and never passes its
figures off as the paper's.
"""

from __future__ import annotations

import sys
from pathlib import Path

from geo.synthetic_checkins import synthetic_checkins, write_snap_checkins
from mdp.errors import DataNotFoundError
from mdp.io import shared_data_dir

__all__ = ["real_data_file", "checkins_file", "SYNTHETIC_NOTE"]

#: Seed of the synthetic check-in log of ``--quick`` runs without the real data (fixed, so that
#: two quick runs compare).
SYNTHETIC_SEED = 2009

#: The line a summary carries when its run used the synthetic log.
SYNTHETIC_NOTE = ("**Data: a synthetic check-in log** (`geo.synthetic_checkins`, seed "
                  f"{SYNTHETIC_SEED}), because the Gowalla check-ins were not found; these "
                  "figures show the pipeline, not the paper's data. Set `MDP_DATA_DIR` to run on them.")


def real_data_file(experiment: str, file: str, what: str, given: str | None = None) -> Path:
    """Path of the real data file ``file`` that ``experiment`` reads, announced on stderr.

    Parameters
    ----------
    experiment : str
        The experiment's name, for messages.
    file : str
        File name inside the real data folder (``$MDP_DATA_DIR`` or ``../shared/data``).
    what : str
        The data in words (e.g. ``"the Gowalla check-ins"``).
    given : str, optional
        A path the user gave (``--data``); used as is, instead of the data folder.

    Raises
    ------
    mdp.errors.DataNotFoundError
        No data folder (the message names the experiment, the data and how to get them).
    """
    if given:
        path = Path(given)
    else:
        try:
            path = shared_data_dir() / file
        except DataNotFoundError as exc:
            raise DataNotFoundError(f"experiment {experiment} needs {what} ({file}), which is "
                                    f"not shipped with the toolkit: {exc}") from None
    print(f"{experiment}: reads {what} from {path} (real data)", file=sys.stderr, flush=True)
    return path


def checkins_file(experiment: str, file: str, given: str | None, quick: bool,
                  out: Path) -> tuple[Path, bool]:
    """The Gowalla check-ins an experiment reads, or for ``--quick`` without them a synthetic log.

    Parameters
    ----------
    experiment : str
        The experiment's name, for messages.
    file : str
        The real file's name inside the data folder.
    given : str, optional
        A path the user gave (``--data``): always used, never replaced by the synthetic log.
    quick : bool
        Whether this is a ``--quick`` run (only those fall back to the synthetic log).
    out : pathlib.Path
        The run's output folder; the synthetic log is written there.

    Returns
    -------
    (path, synthetic) : (pathlib.Path, bool)
        The file to read and whether it is the synthetic log.

    Raises
    ------
    mdp.errors.DataNotFoundError
        No data folder and not a quick run (the message names the experiment, the data and how
        to get them, and that ``--quick`` runs on a synthetic log).
    """
    try:
        return real_data_file(experiment, file, "the Gowalla check-ins", given), False
    except DataNotFoundError as exc:
        if given or not quick:
            raise DataNotFoundError(f"{exc} (--quick runs on a synthetic check-in log instead)") from None
    Path(out).mkdir(parents=True, exist_ok=True)
    path = write_snap_checkins(synthetic_checkins(rng=SYNTHETIC_SEED),
                               Path(out) / "synthetic_checkins.txt.gz")
    print(f"{experiment}: the Gowalla check-ins ({file}) were not found; this quick run uses a "
          f"synthetic check-in log written to {path} (geo.synthetic_checkins, seed "
          f"{SYNTHETIC_SEED}): its figures show the pipeline, not the paper's data",
          file=sys.stderr, flush=True)
    return path, True
