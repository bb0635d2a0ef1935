"""Shared fixtures: fresh random inputs from fixed seeds, the devices a
test runs on (`device`: "cpu", and "cuda" on a CUDA build), and the
kfactor command (KFACTOR_CLI, set by ctest) for comparisons with the C++
driver, which runs on CLI_DEVICE."""

import os
import shutil

import numpy as np
import pytest

import kfactor

CUDA = kfactor.build_info()["cuda"]
# Every device test runs on the host, and on a CUDA build on the GPU too.
DEVICES = ["cpu", "cuda"] if CUDA else ["cpu"]
# The kfactor command runs in the build's default execution space.
CLI_DEVICE = "cuda" if CUDA else "cpu"


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


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
