"""kfactor.sddmm: sampled dense-dense matrix multiplication."""

import numpy as np

from . import _core
from ._base import canonical_csr, check_device, csr_parts, like, on_cuda


def sddmm(S, A, B, device="cpu"):
    """P = S o (A B^T): at every stored entry (i, j) of S (M x N, sparse),
    p_ij = s_ij <A_i, B_j>; A is M x K, B is N x K. Returns a CSR matrix
    with S's pattern (explicit zeros of S kept). A and B are used in place
    when C-contiguous and of S's dtype (float32 or float64); a CUDA build
    takes cupy/torch arrays (S as a cupyx.scipy.sparse matrix) and returns
    the values as the same kind of array."""
    device = check_device(device)
    if on_cuda(A):
        indptr, indices, data = S.indptr.astype("int64"), S.indices.astype("int32"), S.data
        values = _core.sddmm(indptr, indices, data, S.shape[1], A, B, device)
        return type(S)((like(A, values), S.indices, S.indptr), shape=S.shape)
    import scipy.sparse as sp

    S = canonical_csr(S)
    dtype = S.dtype
    for name, M in (("A", A), ("B", B)):
        M = np.asarray(M)
        if M.ndim != 2:
            raise ValueError(f"{name} must be a 2-D array, got {M.ndim} dimension(s)")
    A = np.ascontiguousarray(A, dtype=dtype)
    B = np.ascontiguousarray(B, dtype=dtype)
    values = _core.sddmm(*csr_parts(S), A, B, device)
    return sp.csr_matrix((values, S.indices, S.indptr), shape=S.shape)

