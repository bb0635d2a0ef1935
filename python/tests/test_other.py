"""kfactor.BooleanMF, kfactor.ManifoldNMF and kfactor.sddmm."""

import numpy as np
import pytest
import scipy.sparse as sp

import kfactor
from kfactor import _core


def test_boolean_mf_recovers_a_planted_matrix(rng, device):
    A = (rng.random((60, 4)) < 0.3).astype(np.uint8)
    B = (rng.random((4, 50)) < 0.3).astype(np.uint8)
    C = ((A.astype(int) @ B.astype(int)) > 0).astype(np.float64)
    model = kfactor.BooleanMF(4, max_iter=200, random_state=2, device=device)
    A_fit = model.fit_transform(C)
    assert A_fit.dtype == np.uint8 and model.components_.shape == (4, 50)
    approx = model.inverse_transform(A_fit)
    assert model.reconstruction_err_ == np.count_nonzero(approx != C)
    assert model.relative_error_ < 0.02
    sparse = kfactor.BooleanMF(4, max_iter=200, random_state=2, device=device).fit(sp.csr_matrix(C))
    np.testing.assert_array_equal(sparse.components_, model.components_)


def test_manifold_nmf_with_knn_graphs(rng, device):
    R = sp.random(40, 30, density=0.3, format="csr", random_state=3) * 5
    plain = kfactor.ManifoldNMF(3, max_iter=50, random_state=1, device=device).fit(R)
    graph = kfactor.ManifoldNMF(3, lambda_W=0.5, lambda_H=0.5, n_neighbors=5, max_iter=50, random_state=1,
                                device=device).fit(R)
    for model in (plain, graph):
        names = list(model.history_["names"])
        objective = model.history_["values"][:, names.index("objective")]
        assert objective[-1] < objective[0]
        assert model.user_factors_.min() >= 0 and model.components_.shape == (3, 30)
    assert not np.allclose(plain.components_, graph.components_)
    with pytest.raises(ValueError, match="graph"):
        kfactor.ManifoldNMF(3, lambda_W=0.1, device=device).fit(R, user_graph=-sp.csr_matrix(np.ones((40, 40))))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sddmm_equals_the_dense_product(rng, dtype, device):
    S = sp.random(30, 20, density=0.2, format="csr", random_state=4, dtype=dtype)
    A = rng.random((30, 5)).astype(dtype)
    B = rng.random((20, 5)).astype(dtype)
    P = kfactor.sddmm(S, A, B, device=device)
    if device == "cpu":
        assert _core._last_input_address() == A.__array_interface__["data"][0]
    expected = S.multiply(A @ B.T).tocsr()
    assert P.dtype == dtype
    np.testing.assert_allclose(P.toarray(), expected.toarray(), rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(P.indices, S.indices)
    with pytest.raises(ValueError, match="sddmm"):
        kfactor.sddmm(S, A, B[:, :4], device=device)
    with pytest.raises(ValueError, match="2-D"):
        kfactor.sddmm(S, A[0], B, device=device)


def _noisy_boolean(rng, m, n, k):
    A = rng.random((m, k)) < 0.3
    B = rng.random((k, n)) < 0.3
    C = (A.astype(int) @ B.astype(int)) > 0
    return (C ^ (rng.random((m, n)) < 0.03)).astype(np.float64)


@pytest.mark.parametrize("temperature", [0.0, 0.5])
def test_boolean_mf_save_load_continues_bit_for_bit(rng, tmp_path, temperature, device):
    # temperature > 0 keeps a copy of the best factors beside the current
    # ones: both must travel through the file.
    C = _noisy_boolean(rng, 50, 40, 3)
    kw = dict(n_components=3, batch=16, temperature=temperature, temp_step=5, every_line_changed=0, random_state=5,
              device=device)
    whole = kfactor.BooleanMF(max_iter=30, **kw).fit(C)
    half = kfactor.BooleanMF(max_iter=15, **kw).fit(C)
    assert half.n_iter_ == 15 and whole.n_iter_ == 30
    path = tmp_path / "bmf.h5"
    half.save(path)
    loaded = kfactor.BooleanMF.load(path, max_iter=15, warm_start=True, every_line_changed=0, device=device)
    assert loaded.n_iter_ == 15
    np.testing.assert_array_equal(loaded.components_, half.components_)
    np.testing.assert_array_equal(loaded.A_, half.A_)
    assert loaded.reconstruction_err_ == half.reconstruction_err_
    loaded.fit(C)
    assert loaded.n_iter_ == 30
    np.testing.assert_array_equal(loaded.components_, whole.components_)
    np.testing.assert_array_equal(loaded.A_, whole.A_)
    np.testing.assert_array_equal(loaded.history_["values"], whole.history_["values"])
    # warm_start without the file continues the same way.
    half.set_params(warm_start=True).fit(C)
    np.testing.assert_array_equal(half.components_, whole.components_)
    with pytest.raises(ValueError, match="warm_start"):
        half.fit(C[:-1])


def test_manifold_nmf_save_load_continues_bit_for_bit(rng, tmp_path, device):
    R = sp.random(40, 30, density=0.3, format="csr", random_state=6) * 5
    kw = dict(n_components=3, lambda_W=0.3, lambda_H=0.2, n_neighbors=5, random_state=8, device=device)
    whole = kfactor.ManifoldNMF(max_iter=20, **kw).fit(R)
    half = kfactor.ManifoldNMF(max_iter=10, **kw).fit(R)
    path = tmp_path / "mnmf.h5"
    half.save(path)
    loaded = kfactor.ManifoldNMF.load(path, max_iter=10, warm_start=True, device=device)
    assert loaded.n_iter_ == 10 and loaded.lambda_W == 0.3 and loaded.n_neighbors == 5
    np.testing.assert_array_equal(loaded.components_, half.components_)
    loaded.fit(R)
    assert loaded.n_iter_ == 20
    np.testing.assert_array_equal(loaded.user_factors_, whole.user_factors_)
    np.testing.assert_array_equal(loaded.components_, whole.components_)
    np.testing.assert_array_equal(loaded.history_["values"], whole.history_["values"])
    with pytest.raises(ValueError, match="bmf"):
        kfactor.BooleanMF.load(path)
