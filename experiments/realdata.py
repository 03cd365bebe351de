"""The real data sets an experiment reads (Geolife, Gowalla), announced before any work starts.

Experiments that read the real data say so on stderr before they start, and stop at once, with
the folders looked in and where to get the data, when the data are absent (docs/guide/data.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mdp.errors import DataNotFoundError
from mdp.io import shared_data_dir

__all__ = ["real_data_file"]


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
