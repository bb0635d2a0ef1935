"""kfactor: matrix factorization on Kokkos (NMF, ALS, Boolean MF, manifold
NMF, SDDMM) with scikit-learn's and implicit's conventions.

Importing kfactor initializes Kokkos once (threads from OMP_NUM_THREADS or
KOKKOS_NUM_THREADS) and finalizes it at interpreter exit."""

from . import _core
from .als import ALS
from .bmf import BooleanMF
from .evaluation import (
    AUC_at_k,
    leave_k_out_split,
    mean_average_precision_at_k,
    ndcg_at_k,
    precision_at_k,
    ranking_metrics_at_k,
    recall_at_k,
    train_test_split,
)
from .mnmf import ManifoldNMF
from .nmf import NMF
from .sddmm import sddmm

__version__ = _core.build_info()["version"]


def build_info():
    """What this build has: version, Kokkos version and execution spaces,
    BLAS, MPI, HDF5, CUDA, and the host threads Kokkos uses."""
    return _core.build_info()


__all__ = [
    "ALS",
    "AUC_at_k",
    "BooleanMF",
    "ManifoldNMF",
    "NMF",
    "build_info",
    "leave_k_out_split",
    "mean_average_precision_at_k",
    "ndcg_at_k",
    "precision_at_k",
    "ranking_metrics_at_k",
    "recall_at_k",
    "sddmm",
    "train_test_split",
]
