"""kfactor.NMF(comm=...): the distributed solver over an mpi4py
communicator. Run under mpiexec (ctest python_mpi: 2 ranks); every rank
builds the same X from the same seed and passes it whole."""

import numpy as np
import pytest
from mpi4py import MPI

import kfactor

comm = MPI.COMM_WORLD

pytestmark = pytest.mark.skipif(not kfactor.build_info()["mpi"], reason="a kfactor build without MPI")


def planted(seed, m, n, k):
    rng = np.random.default_rng(seed)
    return rng.random((m, k)) @ rng.random((k, n)) + 0.01


def same_on_every_rank(a):
    return all(np.array_equal(a, other) for other in comm.allgather(a))


@pytest.mark.parametrize("algorithm", ["hals", "alo", "mu"])
def test_distributed_equals_single_process_within_the_documented_tolerance(algorithm):
    X = planted(11, 60, 45, 4)
    kw = dict(n_components=4, algorithm=algorithm, init="random", max_iter=12, tol=0, random_state=3)
    dist = kfactor.NMF(comm=comm, **kw)
    W = dist.fit_transform(X)
    single = kfactor.NMF(**kw)
    W1 = single.fit_transform(X)
    assert dist.n_iter_ == single.n_iter_ == 12
    # kfactor/distributed/nmf.hpp: max |W - W_1| / max |W_1| <= 1e-9 (and
    # Ht), relative errors within 1e-8 relative, in double.
    assert np.abs(W - W1).max() <= 1e-9 * np.abs(W1).max()
    assert np.abs(dist.components_ - single.components_).max() <= 1e-9 * np.abs(single.components_).max()
    assert abs(dist.relative_error_ - single.relative_error_) <= 1e-8 * single.relative_error_
    assert same_on_every_rank(W) and same_on_every_rank(dist.components_)
    # The fitted model is an ordinary one on every rank.
    np.testing.assert_allclose(dist.inverse_transform(W), W @ dist.components_, rtol=1e-12)


def test_one_rank_equals_the_single_process_fit_bit_for_bit():
    X = planted(12, 30, 25, 3)
    kw = dict(n_components=3, init="random", max_iter=8, tol=0, random_state=4)
    one = kfactor.NMF(comm=MPI.COMM_SELF, **kw).fit(X)
    single = kfactor.NMF(**kw).fit(X)
    np.testing.assert_array_equal(one.components_, single.components_)


def test_a_stop_on_one_rank_stops_every_rank():
    X = planted(13, 40, 30, 3)
    stop_at = 4

    def callback(iteration, metrics):
        return comm.rank == 0 and iteration >= stop_at

    model = kfactor.NMF(3, init="random", max_iter=50, tol=0, random_state=5, callback=callback, comm=comm).fit(X)
    assert model.n_iter_ == stop_at
    assert comm.allgather(model.n_iter_) == [stop_at] * comm.size


def test_refusals():
    import scipy.sparse as sp

    X = planted(14, 20, 10, 2)
    with pytest.raises(ValueError, match="dense"):
        kfactor.NMF(2, comm=comm).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="differ|checksum"):
        kfactor.NMF(2, init="random", comm=comm).fit(X + comm.rank)
