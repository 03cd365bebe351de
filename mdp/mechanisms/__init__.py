"""Built-in mechanism families; importing this package registers them.

Each module holds one family and registers it under the name shown here, so a reader finds any
registered mechanism in one hop:

==========================  ================================================
name                        module
==========================  ================================================
``exponential``             :mod:`mdp.mechanisms.exponential`
``weighted_exponential``    :mod:`mdp.mechanisms.exponential`
==========================  ================================================
"""

from . import exponential  # noqa: F401
