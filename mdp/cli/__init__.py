"""The ``mdp`` command line: the commands, their arguments and input lines."""
