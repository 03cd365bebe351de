"""``mdp heatsource``: plan a locally private heat-sensor deployment (Gilbert & McMillan 2018).

Prints the sensitivity of the heat matrix, the per-sensor noise of every calibration rule (with
the exact delta each one achieves), and the EMD error of l1 recovery over repeated trials at the
user's settings::

    mdp heatsource --n 100 --m 50 --T 0.05 --epsilon 1 --delta 1e-3 --trials 10
"""

from __future__ import annotations

import argparse

from mdp.errors import ParameterError
from mdp.plugins import Command
from mdp.validation import check_int, check_positive

#: The calibration rules of :func:`mdp.privacy.gaussian.gaussian_sigma` (the same tuple as its
#: ``GAUSSIAN_RULES``, a test checks), written here so that building the parser imports no SciPy.
RULES = ("analytic", "classical", "seed")

__all__ = ["configure_parser", "run_cli"]


def _position(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sources must be numbers in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"--sources must be numbers in (0, 1], got {text!r}")
    return value


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Options of ``mdp heatsource``."""
    parser.description = ("Calibrate local Gaussian noise for m heat sensors and report the EMD "
                          "error of l1 recovery (Gilbert & McMillan 2018).")
    parser.add_argument("--n", type=int, default=100, help="source grid size (locations i/n)")
    parser.add_argument("--m", type=int, default=50, help="number of sensors (at j/m)")
    parser.add_argument("--T", type=float, default=0.05, help="mu * t (Gilbert & McMillan use mu = 1/2)")
    parser.add_argument("--epsilon", type=float, default=1.0,
                        help="epsilon of each sensor's (epsilon, delta) local DP (default 1)")
    parser.add_argument("--delta", type=float, default=1e-3,
                        help="delta of each sensor's (epsilon, delta) local DP (default 1e-3)")
    parser.add_argument("--rule", choices=RULES, default="analytic",
                        help="calibration used for the trials (default: analytic)")
    parser.add_argument("--sigma", type=float, default=None,
                        help="use this noise instead of a private calibration (non-private run)")
    parser.add_argument("--k", type=int, default=1, help="number of unit sources (1: at 0.5; else random)")
    parser.add_argument("--sources", type=_position, nargs="+", default=None,
                        help="fixed source positions in (0,1], separated by spaces or commas (overrides --k)")
    parser.add_argument("--trials", type=int, default=10,
                        help="independent noisy recoveries averaged in the report (default 10)")
    parser.add_argument("--seed", type=int, default=0,
                        help="random seed of the sources and the noise (default 0)")
    parser.add_argument("--plot", default=None, help="PNG file: f0 and f_hat of the first trial")


def run_cli(args: argparse.Namespace) -> int:
    """Run ``mdp heatsource``; returns the exit code."""
    import numpy as np

    from mdp.privacy.gaussian import GAUSSIAN_RULES, gaussian_delta, gaussian_sigma

    from .heatsource import (
        LARGE_N,
        calibrate_sensors,
        compress_matrix,
        heat_matrix,
        mean_ci,
        run_trials,
        sensitivity,
        source_positions,
    )

    n = check_int(args.n, "n", low=2)
    m = check_int(args.m, "m", low=1)
    T = check_positive(args.T, "T")
    trials = check_int(args.trials, "trials", low=1)
    A = heat_matrix(n, m, T)
    sens = sensitivity(A)
    if not (np.isfinite(sens) and sens > 0):
        raise ParameterError(f"--T {T:g}: the heat matrix has sensitivity {sens:g}: every sensor "
                             "reads the same whatever the sources, so nothing can be recovered; "
                             "use a smaller T (Gilbert & McMillan use T of order 0.01-0.1)")
    print(f"heat matrix: n={n} source cells, m={m} sensors, T={T:g}")
    print(f"sensitivity Delta_2(A) = {sens:.6g}   (Gilbert & McMillan bound O(sqrt(m)/(n T^1.5)) = "
          f"{np.sqrt(m) / n / np.float64(T) ** 1.5:.4g} x const)")
    print(f"per-sensor Gaussian noise for (epsilon={args.epsilon:g}, delta={args.delta:g})-LDP:")
    for rule in GAUSSIAN_RULES:
        try:
            s = gaussian_sigma(args.epsilon, args.delta, sens, rule)
        except ValueError as exc:
            print(f"  {rule:10s} n/a ({exc})")
            continue
        print(f"  {rule:10s} sigma = {s:.6g}   exact delta at epsilon: "
              f"{gaussian_delta(s, args.epsilon, sens):.3g}")
    if args.sigma is not None:
        sigma = check_positive(args.sigma, "sigma")
        print(f"using sigma = {sigma:g} given on the command line (NOT calibrated: no privacy claim)")
    else:
        cal = calibrate_sensors(A, args.epsilon, args.delta, args.rule)
        sigma = cal.sigma
        print(f"using rule {args.rule!r}: sigma = {sigma:.6g} (verified: exact delta "
              f"{cal.delta_exact:.3g} <= {args.delta:g})")
    print(f"recovery radius rho = sigma sqrt(m) = {sigma * np.sqrt(m):.6g}")

    sources = None
    if args.sources is not None:
        grid = source_positions(n)
        sources = np.zeros(n)
        sources[[int(np.argmin(np.abs(grid - p))) for p in args.sources]] = 1.0
    operator = compress_matrix(A) if n > LARGE_N else A
    rows = run_trials(operator, sigma, trials, k=args.k, sources=sources, rng=args.seed)
    print("trial  policy        EMD([0,1] units)  duality gap")
    for i, r in enumerate(rows):
        print(f"{i:5d}  {r['policy']:12s}  {r['emd']:16.5f}  {r['gap']:.2e}")
    mean, half = mean_ci([r["emd"] for r in rows])
    n_inf = sum(r["infeasible"] for r in rows)
    n_zero = sum(r["zero"] for r in rows)
    n_opt = sum(r["optimal"] for r in rows)
    print(f"EMD error: {mean:.5f} +- {half:.5f} (95% CI over {trials} trials; x n = "
          f"{mean * n:.2f} grid steps)")
    print(f"infeasible at rho = sigma sqrt(m) (radius widened): {n_inf}/{trials}; "
          f"f_hat = 0 (scored as uniform): {n_zero}/{trials}; certified optimal: {n_opt}/{trials}")
    if args.plot:
        _plot(rows[0], n, m, T, sigma, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _plot(row: dict, n: int, m: int, T: float, sigma: float, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mdp.io import atomic_write

    from .heatsource import source_positions

    x = source_positions(n)
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(x, row["f0"] / row["f0"].sum(), "r-", label="f0")
    if row["f"].sum() > 0:
        ax.plot(x, row["f"] / row["f"].sum(), "b--", label="f_hat")
    ax.set(xlabel="location", ylabel="normalised intensity",
           title=f"n={n}, m={m}, T={T:g}, sigma={sigma:.3g}, EMD={row['emd']:.3f}")
    ax.legend()
    fig.tight_layout()
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=120))
    plt.close(fig)


#: ``mdp heatsource``, registered in the ``mdp.commands`` entry-point group.
COMMAND = Command(help="calibrate noise and recover heat sources (Gilbert & McMillan)",
                  configure_parser=configure_parser, run=run_cli)
