from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data in ../shared/data (CI clones the project with ../shared beside it)."""
    from mdp.io import shared_data_dir

    return shared_data_dir()
