r"""Dense Schur complements of the structured interior point methods, on the CPU or a GPU.

The row-block interior point method of ConstOPTMech (:mod:`mdp.families.constopt_ipm`) spends
almost all of an iteration on one dense step: with the linking matrix ``L`` (``2n x t``; rows
``u`` and ``n + u`` are matrix row ``u``'s loss and row-sum rows) and, per ``u``, the Cholesky
factor ``R_u = [[a_u, b_u], [0, c_u]]`` of the ``2 x 2`` block ``M_u`` that couples them,

.. math:: G = \begin{pmatrix} \operatorname{diag}(a) & \operatorname{diag}(b) \\
          0 & \operatorname{diag}(c) \end{pmatrix} L, \qquad
          S = L^\top M L + E = G^\top G + E, \qquad S = C C^\top,

one symmetric rank-``2n`` update of ``2 n t^2`` flops (NumPy runs ``G.T @ G`` as BLAS ``syrk``,
half a general product, and the result is a Gram matrix, positive semidefinite by
construction) and a Cholesky factorisation of ``t^3 / 3``, then ``d = S^{-1} (r - L^\top c)``
and ``L d`` per right-hand side (``E`` is sparse). At n = 5000
(``t ~ n``) that is ~3e11 flops per iteration. :class:`CPUSchur` does it with NumPy and SciPy
(LAPACK); :class:`GPUSchur` with CuPy on an NVIDIA GPU (cuBLAS and cuSOLVER, float64), keeping
``L`` and the factor on the device so that only vectors cross the bus.

Which one runs is :func:`schur_device`'s choice: the GPU when CuPy finds a CUDA device and the
matrix is large enough to gain (``GPU_MIN_SIZE``), else the CPU. The environment variable
``MDP_DEVICE`` overrides it (``cpu``, ``gpu`` or ``auto``). Both compute the same quantities in
float64; results agree to rounding (``tests/test_dense_schur.py``), and nothing downstream
trusts them: every matrix built from them is certified on the CPU.

The GPU path is optional: the ``gpu`` extra of this package (``pip install -e ".[gpu]"``,
CuPy for CUDA 12, which CUDA 13 drivers also run) or ``pip install cupy-cuda13x``. Measured
figures: ``docs/design/lp.md``, "A GPU for the row-block interior point method".
"""

from __future__ import annotations

import functools
import os

import numpy as np
import scipy.linalg as sl

from ..errors import ParameterError, SolverError

__all__ = ["DEVICE_ENV", "GPU_MIN_SIZE", "gpu_available", "schur_device", "schur_factor",
           "CPUSchur", "GPUSchur"]

#: Environment variable that picks the device of the dense step: ``auto`` (default), ``cpu``, ``gpu``.
DEVICE_ENV = "MDP_DEVICE"
#: Side of the dense Schur complement from which ``auto`` uses a GPU (below it the transfers and
#: kernel launches cost more than the flops saved).
GPU_MIN_SIZE = 1000


@functools.lru_cache(maxsize=1)
def _cupy():
    """The CuPy module when it imports and sees a CUDA device, else ``None``."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        cupy.zeros(1).sum()                     # a driver or toolkit mismatch fails here
    except Exception:  # noqa: BLE001 -- no CuPy, no driver, no device: all mean "no GPU"
        return None
    return cupy


def gpu_available() -> bool:
    """Whether CuPy is installed and sees a usable CUDA device."""
    return _cupy() is not None


def schur_device(size: int) -> str:
    """``"gpu"`` or ``"cpu"`` for a dense Schur complement of side ``size``.

    Reads ``MDP_DEVICE``: ``cpu`` and ``gpu`` force a device (``gpu`` without a usable CUDA device
    is an error), ``auto`` or unset takes the GPU when one is available and
    ``size >= GPU_MIN_SIZE``.

    Raises
    ------
    ParameterError
        ``MDP_DEVICE`` holds another value, or asks for a GPU that CuPy cannot use.
    """
    want = os.environ.get(DEVICE_ENV, "auto").strip().lower() or "auto"
    if want not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"environment variable {DEVICE_ENV} must be 'auto', 'cpu' or 'gpu', "
                             f"got {os.environ[DEVICE_ENV]!r}")
    if want == "cpu":
        return "cpu"
    if want == "gpu":
        if not gpu_available():
            raise ParameterError(f"{DEVICE_ENV}=gpu, but CuPy is not installed or sees no CUDA "
                                 "device (pip install cupy-cuda12x or cupy-cuda13x; "
                                 f"{DEVICE_ENV}=auto uses the CPU then)")
        return "gpu"
    return "gpu" if size >= GPU_MIN_SIZE and gpu_available() else "cpu"


class CPUSchur:
    """The dense step on the CPU (NumPy ``G.T @ G``, i.e. BLAS ``syrk``; LAPACK Cholesky).

    Parameters
    ----------
    L : ndarray (2n, t)
        The linking matrix before the per-iteration updates (rows ``0..n-1``: loss rows,
        ``n..2n-1``: row-sum rows).
    """

    device = "cpu"

    def __init__(self, L: np.ndarray):
        self.L0 = np.asarray(L, dtype=float)
        self.n = self.L0.shape[0] // 2
        self.L = np.empty_like(self.L0)

    def factor(self, update: tuple, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               extra: tuple) -> None:
        """``L = L0 + update``, ``G = R L``, ``S = G^T G + extra``, ``S = C C^T``.

        ``update`` and ``extra`` are ``(rows, cols, values)`` triples, summed where indices
        repeat; ``extra`` must be symmetric (only the lower triangle of ``S`` is read). ``a``,
        ``b``, ``c`` (length n) are the blocks' Cholesky factors ``[[a, b], [0, c]]``.

        Raises
        ------
        SolverError
            ``S`` is not numerically positive definite.
        """
        n, L = self.n, self.L
        np.copyto(L, self.L0)
        np.add.at(L, update[:2], update[2])
        G = np.empty_like(L)
        np.multiply(a[:, None], L[:n], out=G[:n])
        G[:n] += b[:, None] * L[n:]
        np.multiply(c[:, None], L[n:], out=G[n:])
        S = G.T @ G
        del G
        np.add.at(S, extra[:2], extra[2])
        try:
            self.cho = sl.cho_factor(S, lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise SolverError("the interior point method's normal matrix lost positive "
                              "definiteness") from exc
        if not np.all(np.isfinite(np.diagonal(self.cho[0]))):
            raise SolverError("the interior point method's normal matrix lost positive definiteness")

    def solve(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``d = S^{-1} (r - L^T c)`` and ``L d``."""
        d = sl.cho_solve(self.cho, r - self.L.T @ c, check_finite=False)
        return d, self.L @ d


class GPUSchur:
    """The dense step on an NVIDIA GPU through CuPy (cuBLAS GEMM, cuSOLVER Cholesky), float64.

    ``L0``, the updated ``L`` and the Cholesky factor stay on the device; each call moves only
    vectors and index arrays. Same interface and arithmetic as :class:`CPUSchur`.
    """

    device = "gpu"

    def __init__(self, L: np.ndarray):
        cp = _cupy()
        if cp is None:
            raise ParameterError("no usable CUDA device for GPUSchur (CuPy missing or no GPU)")
        self.cp = cp
        self.host = np.asarray(L, dtype=float)           # for a fall-back to the CPU
        try:
            self.L0 = cp.asarray(self.host)
            self.L = cp.empty_like(self.L0)
        except cp.cuda.memory.OutOfMemoryError as exc:
            raise MemoryError(f"GPU memory: {exc}") from exc
        self.n = self.L0.shape[0] // 2

    def factor(self, update: tuple, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               extra: tuple) -> None:
        """As :meth:`CPUSchur.factor`; ``MemoryError`` when the GPU's memory runs out."""
        try:
            self._factor(update, a, b, c, extra)
        except self.cp.cuda.memory.OutOfMemoryError as exc:
            raise MemoryError(f"GPU memory: {exc}") from exc

    def _factor(self, update, a, b, c, extra) -> None:
        cp, n, L = self.cp, self.n, self.L
        cp.copyto(L, self.L0)
        cp.add.at(L, (cp.asarray(update[0]), cp.asarray(update[1])), cp.asarray(update[2]))
        a, b, c = (cp.asarray(v)[:, None] for v in (a, b, c))
        G = cp.empty_like(L)
        G[:n] = a * L[:n] + b * L[n:]
        G[n:] = c * L[n:]
        S = G.T @ G
        del G
        cp.add.at(S, (cp.asarray(extra[0]), cp.asarray(extra[1])), cp.asarray(extra[2]))
        # cuSOLVER reports a failed factorisation through its info flag only; NaN in the factor
        # (CuPy's default) or a non-positive pivot both mean "not positive definite"
        try:
            C = cp.linalg.cholesky(S)
        except cp.cuda.memory.OutOfMemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 -- CuPy raises LinAlgError or a cuSOLVER error
            raise SolverError("the interior point method's normal matrix lost positive "
                              "definiteness") from exc
        diag = cp.diagonal(C)
        if not bool(cp.all(cp.isfinite(diag) & (diag > 0))):
            raise SolverError("the interior point method's normal matrix lost positive definiteness")
        self.C = C

    def solve(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`CPUSchur.solve`."""
        from cupyx.scipy.linalg import solve_triangular

        cp = self.cp
        rhs = cp.asarray(r) - self.L.T @ cp.asarray(c)
        y = solve_triangular(self.C, rhs, lower=True)
        d = solve_triangular(self.C, y, lower=True, trans="T")
        return cp.asnumpy(d), cp.asnumpy(self.L @ d)


def schur_factor(L: np.ndarray) -> CPUSchur | GPUSchur:
    """The dense step for linking matrix ``L`` on the device :func:`schur_device` picks.

    A GPU without the memory for ``L`` gives the CPU step.
    """
    if schur_device(L.shape[1]) == "gpu":
        try:
            return GPUSchur(L)
        except MemoryError:
            pass
    return CPUSchur(L)
