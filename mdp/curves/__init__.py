"""Comparing mechanisms: calibration to an exact privacy level, loss curves on a matrix space and at vocabulary scale, and their plots."""
