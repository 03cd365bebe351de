"""Independent reference for the Gaussian mechanism tests (scipy.stats, not mdp's code)."""

import numpy as np
from scipy.stats import norm


def exact_delta_scipy(sigma, eps, sens):
    """Balle & Wang Thm 8 evaluated independently with scipy.stats.norm."""
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    return norm.cdf(a) - np.exp(eps) * norm.cdf(b)
