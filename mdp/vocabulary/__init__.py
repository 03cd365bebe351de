"""Vocabulary mode: mechanisms with an analytic guarantee sampled without an n x n matrix, and the exact nearest-neighbour index they use."""
