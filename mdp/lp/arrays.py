r"""The array backend of the LP engine's device paths (NumPy or CuPy) and its one device rule.

Two steps of the structured interior point methods can run on an NVIDIA GPU: the dense Schur
complement of ConstOPTMech's row blocks (:mod:`mdp.lp.dense`) and the batched block inverses of
the column-block method (:mod:`mdp.worst_case.batched_blocks`). Both reach the GPU through an
:class:`ArrayBackend` (:func:`cupy_backend`: CuPy, cuBLAS and cuSOLVER in float64) and both pick
their device by :func:`device_choice`:

- the environment variable ``MDP_DEVICE`` forces ``cpu`` or ``gpu`` (``gpu`` without a GPU
  backend is an error); ``auto`` (or unset) takes
- the GPU where a GPU backend exists and the step's size reaches the caller's threshold
  (``gpu_from``: data of the caller's tuning, e.g. ``BlockResources.gpu_from_n`` or
  ``ConstOPTTuning.gpu_from_size``), else the CPU.

Which backend stands for "the GPU" is data too: :data:`DETECT` (the default) finds CuPy's where
CuPy sees a CUDA device; ``None`` means none; any :class:`ArrayBackend` (the tests pass
:func:`numpy_backend`) stands in for it. Nothing downstream trusts a device: every matrix built
from either is certified on the CPU.

The GPU path is optional: the ``gpu`` extra of this package (``pip install -e ".[gpu]"``, CuPy
for CUDA 12, which CUDA 13 drivers also run) or ``pip install cupy-cuda13x``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from ..errors import ParameterError

__all__ = ["ArrayBackend", "numpy_backend", "cupy_backend", "cupy_module", "gpu_available",
           "DETECT", "GPUChoice", "resolve_gpu", "device_choice", "DEVICE_ENV"]

#: Environment variable that picks the device of every GPU-capable step: ``auto`` (default),
#: ``cpu`` or ``gpu``.
DEVICE_ENV = "MDP_DEVICE"
#: The GPU backend found on this machine (:func:`cupy_backend`), as the default of every
#: ``gpu=`` parameter and tuning field.
DETECT = "detect"


@dataclass(frozen=True)
class ArrayBackend:
    """The array operations of the device paths on one device.

    Attributes
    ----------
    name : str
        ``"gpu"`` or ``"numpy"``.
    xp : module
        ``cupy`` or ``numpy``.
    to_device, to_host : callable
        Host array to the device's array type and back.
    sparse_matrix : callable
        SciPy CSR matrix to the device's sparse matrix type.
    cholesky : callable
        Lower Cholesky factors of ``(c, n, n)`` or ``(n, n)``; ``numpy.linalg.LinAlgError`` where
        one does not exist.
    lower_inverse : callable
        Batched ``L^{-1}`` of lower triangular ``(c, n, n)`` factors.
    solve_triangular : callable
        ``solve_triangular(L, b, trans)``: ``L^{-1} b`` (``trans=False``) or ``L^{-T} b`` for a
        lower triangular ``L``.
    free_bytes : callable
        Bytes the device can still allocate, or ``None`` for no limit (host memory is the CPU
        path's concern).
    out_of_memory : tuple of exception types
        What the device raises when its memory runs out.
    """

    name: str
    xp: Any
    to_device: Callable
    to_host: Callable
    sparse_matrix: Callable
    cholesky: Callable
    lower_inverse: Callable
    solve_triangular: Callable
    free_bytes: Callable
    out_of_memory: tuple = (MemoryError,)


#: A GPU backend, none, or :data:`DETECT`.
GPUChoice = ArrayBackend | None | str


def numpy_backend() -> ArrayBackend:
    """The device paths on the CPU with NumPy and SciPy (a reference for tests, and what they
    pass as ``gpu=`` to run a GPU path without a GPU)."""

    def lower_inverse(L):
        eye = np.broadcast_to(np.eye(L.shape[-1]), L.shape)
        return sl.solve_triangular(L, eye, lower=True, check_finite=False)

    def solve_triangular(L, b, trans=False):
        return sl.solve_triangular(L, b, lower=True, trans="T" if trans else "N",
                                   check_finite=False)

    return ArrayBackend(name="numpy", xp=np, to_device=np.asarray, to_host=np.asarray,
                        sparse_matrix=sp.csr_matrix, cholesky=np.linalg.cholesky,
                        lower_inverse=lower_inverse, solve_triangular=solve_triangular,
                        free_bytes=lambda: None)


@functools.lru_cache(maxsize=1)
def cupy_module():
    """The CuPy module when it imports and sees a CUDA device, else ``None``."""
    try:
        import cupy  # optional: the ``gpu`` extra
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        cupy.zeros(1).sum()                     # a driver or toolkit mismatch fails here
    except Exception:  # noqa: BLE001 -- no CuPy, no driver, no device: all mean "no GPU"
        return None
    return cupy


def gpu_available() -> bool:
    """Whether CuPy is installed and sees a usable CUDA device."""
    return cupy_module() is not None


@functools.lru_cache(maxsize=1)
def cupy_backend() -> ArrayBackend | None:
    """The device paths on an NVIDIA GPU with CuPy, or ``None`` without a usable device.

    One batched library call per chunk of blocks: cuSOLVER ``potrfBatched`` (its info flags
    checked), cuBLAS batched ``trsm`` and strided-batched GEMM, all in float64. (One call per
    block was 10x slower at n = 500 and 2.8x at n = 1000 on an H200: ``docs/design/lp.md``.)
    """
    cp = cupy_module()
    if cp is None:
        return None
    import cupyx
    import cupyx.scipy.linalg as cla
    import cupyx.scipy.sparse as csp

    def free_bytes():
        pool = cp.get_default_memory_pool()
        return int(cp.cuda.runtime.memGetInfo()[0] + pool.free_bytes())

    def cholesky(K):
        with cupyx.errstate(linalg="raise"):        # cuSOLVER's info flags, checked
            return cp.linalg.cholesky(K)

    def lower_inverse(L):
        eye = cp.ascontiguousarray(cp.broadcast_to(cp.eye(L.shape[-1]), L.shape))
        return cla.solve_triangular(L, eye, lower=True)

    def solve_triangular(L, b, trans=False):
        return cla.solve_triangular(L, b, lower=True, trans="T" if trans else "N")

    return ArrayBackend(name="gpu", xp=cp, to_device=cp.asarray, to_host=cp.asnumpy,
                        sparse_matrix=csp.csr_matrix, cholesky=cholesky,
                        lower_inverse=lower_inverse, solve_triangular=solve_triangular,
                        free_bytes=free_bytes,
                        out_of_memory=(MemoryError, cp.cuda.memory.OutOfMemoryError))


def resolve_gpu(gpu: GPUChoice = DETECT) -> ArrayBackend | None:
    """The backend that stands for the GPU: CuPy's for :data:`DETECT` (None without one), else
    ``gpu`` itself."""
    if isinstance(gpu, str):
        if gpu != DETECT:
            raise ParameterError(f"gpu must be an ArrayBackend, None or {DETECT!r}, got {gpu!r}")
        return cupy_backend()
    return gpu


def device_choice(size: int, gpu_from: int, gpu: GPUChoice = DETECT) -> str:
    """``"gpu"`` or ``"cpu"`` for a step of ``size`` that gains on a GPU from ``gpu_from``.

    ``MDP_DEVICE=cpu`` or ``gpu`` forces a device; ``auto`` (or unset) takes the GPU where
    ``gpu`` (:func:`resolve_gpu`) is a backend and ``size >= gpu_from``.

    Raises
    ------
    ParameterError
        ``MDP_DEVICE`` holds another value, or asks for a GPU where there is none.
    """
    want = os.environ.get(DEVICE_ENV, "auto").strip().lower() or "auto"
    if want not in ("auto", "cpu", "gpu"):
        raise ParameterError(f"environment variable {DEVICE_ENV} must be 'auto', 'cpu' or 'gpu', "
                             f"got {os.environ[DEVICE_ENV]!r}")
    if want == "cpu":
        return "cpu"
    if want == "gpu":
        if resolve_gpu(gpu) is None:
            raise ParameterError(f"{DEVICE_ENV}=gpu, but CuPy is not installed or sees no CUDA "
                                 "device (pip install cupy-cuda12x or cupy-cuda13x; "
                                 f"{DEVICE_ENV}=auto uses the CPU then)")
        return "gpu"
    return "gpu" if size >= gpu_from and resolve_gpu(gpu) is not None else "cpu"
