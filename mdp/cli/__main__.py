"""``python -m mdp.cli``: the ``mdp`` command."""

import sys

from .main import main

sys.exit(main())
