"""Shared fixtures: fresh random inputs from fixed seeds, and the kfactor
command (KFACTOR_CLI, set by ctest) for comparisons with the C++ driver."""

import os
import shutil

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def planted_nonnegative(rng, m, n, k, dtype=np.float64):
    """An exactly rank-k non-negative m x n matrix."""
    return (rng.random((m, k)) @ rng.random((k, n))).astype(dtype)


def interactions(rng, users, items, per_user, dtype=np.float32):
    """Implicit-feedback counts: each user interacts with per_user items,
    drawn from two taste groups so that a rank-2 model has signal."""
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for u in range(users):
        group = u % 2
        pool = np.arange(items)[np.arange(items) % 2 == group]
        chosen = rng.choice(pool, size=per_user, replace=False)
        rows += [u] * per_user
        cols += list(chosen)
        vals += list(rng.integers(1, 5, size=per_user))
    return sp.csr_matrix((np.asarray(vals, dtype=dtype), (rows, cols)), shape=(users, items))


@pytest.fixture
def cli():
    path = os.environ.get("KFACTOR_CLI") or shutil.which("kfactor")
    if not path or not os.path.exists(path):
        pytest.skip("the kfactor command is not built (KFACTOR_CLI)")
    return path
