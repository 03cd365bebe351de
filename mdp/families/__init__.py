"""Built-in mechanism families; importing this package registers them.

Every module of this package holds one family (or two closely related ones) and registers it
with :func:`mdp.register`; all modules here are imported, so adding a file adds a family. The LP
families are subpackages (:mod:`mdp.families.optimal`, :mod:`mdp.families.spanner`,
:mod:`mdp.families.constopt`), each with its formulation, its tuning, its ``plan`` (every
decision about a build's path) and its build.
``mdp list`` prints each name with its module (``mdp.mechanisms()`` is the listing function), so a reader finds any registered mechanism in
one hop (for instance ``exponential`` -> :mod:`mdp.families.exponential`).
"""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    importlib.import_module(f"{__name__}.{_info.name}")
