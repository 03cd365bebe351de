"""Certifying privacy: the rigorous accounting, the certification and repair of a matrix, exact arithmetic, the exact sampler, and the checks of what a file or an epsilon claims."""
