"""Comparing mechanisms: calibration to an exact privacy level, loss curves on a matrix space and at vocabulary scale, and their plots."""

#: Where ``mdp curves`` writes when not told (created with its parents).
DEFAULT_OUT_DIR = "results/curves"
