"""kfactor.sddmm: sampled dense-dense matrix multiplication."""

import numpy as np

from . import _core
from ._base import canonical_csr, check_device, contiguous, csr_parts, like, on_cuda


def sddmm(S, A, B, device="cpu"):
    """P = S o (A B^T): at every stored entry (i, j) of S (M x N, sparse),
    p_ij = s_ij <A_i, B_j>; A is M x K, B is N x K. Returns a CSR matrix
    with S's pattern (explicit zeros of S kept). A and B are used in place
    when C-contiguous and of S's dtype (float32 or float64). On a CUDA
    build, A and B may be cupy or torch arrays and S a cupyx.scipy.sparse
    CSR matrix, all used in place; the result is a CSR matrix of S's kind
    (scipy's for a host S, cupyx's for a CUDA one)."""
    device = check_device(device)
    for name, M in (("A", A), ("B", B)):
        ndim = M.ndim if hasattr(M, "ndim") else np.asarray(M).ndim
        if ndim != 2:
            raise ValueError(f"{name} must be a 2-D array, got {ndim} dimension(s)")
    if on_cuda(getattr(S, "data", None)):
        import cupyx.scipy.sparse as csp

        S = S.tocsr()
        if not S.has_canonical_format:
            S = S.copy()
            S.sum_duplicates()
        dtype = np.dtype(S.dtype).type
        values = _core.sddmm(S.indptr.astype(np.int64), S.indices.astype(np.int32), contiguous(S.data),
                             S.shape[1], contiguous(A, dtype), contiguous(B, dtype), device)
        return csp.csr_matrix((like(S.data, values), S.indices, S.indptr), shape=S.shape)
    import scipy.sparse as sp

    S = canonical_csr(S)
    dtype = S.dtype.type
    values = _core.sddmm(*csr_parts(S), contiguous(A, dtype), contiguous(B, dtype), device)
    return sp.csr_matrix((values, S.indices, S.indptr), shape=S.shape)
