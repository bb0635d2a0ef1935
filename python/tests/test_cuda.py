"""CUDA arrays (cupy, torch) with device="cuda": used in place, results of
the input's kind and equal to those of the same data given as numpy,
checks on the device, and the estimators that read their input on the host
refusing them. Runs on a CUDA build with cupy or torch installed."""

import numpy as np
import pytest
import scipy.sparse as sp

import kfactor
from kfactor import _core
from conftest import CUDA, planted_nonnegative

pytestmark = pytest.mark.skipif(not CUDA, reason="a CPU build of kfactor")


class Cupy:
    def __init__(self):
        self.lib = pytest.importorskip("cupy")

    def put(self, a):
        return self.lib.asarray(a)

    def get(self, a):
        return self.lib.asnumpy(a)

    def address(self, a):
        return a.data.ptr

    def is_mine(self, a):
        return isinstance(a, self.lib.ndarray)


class Torch:
    def __init__(self):
        self.lib = pytest.importorskip("torch")
        if not self.lib.cuda.is_available():
            pytest.skip("torch without CUDA")

    def put(self, a):
        return self.lib.from_numpy(np.ascontiguousarray(a)).cuda()

    def get(self, a):
        return a.cpu().numpy()

    def address(self, a):
        return a.data_ptr()

    def is_mine(self, a):
        return isinstance(a, self.lib.Tensor) and a.is_cuda


@pytest.fixture(params=["cupy", "torch"])
def gpu(request):
    return Cupy() if request.param == "cupy" else Torch()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("algorithm", ["hals", "mu"])
def test_nmf_uses_the_array_in_place_and_answers_in_kind(rng, gpu, dtype, algorithm):
    X = planted_nonnegative(rng, 60, 40, 4, dtype)
    kw = dict(n_components=4, algorithm=algorithm, init="random", max_iter=40, tol=0, random_state=3, device="cuda")
    Xd = gpu.put(X)
    model = kfactor.NMF(**kw)
    W = model.fit_transform(Xd)
    assert _core._last_input_address() == gpu.address(Xd)
    assert gpu.is_mine(W) and gpu.is_mine(model.components_)
    assert W.shape == (60, 4) and model.components_.shape == (4, 40)
    # The same data from the host runs the same kernels: the same factors.
    host = kfactor.NMF(**kw)
    W_host = host.fit_transform(X)
    np.testing.assert_array_equal(gpu.get(W), W_host)
    np.testing.assert_array_equal(gpu.get(model.components_), host.components_)
    assert model.relative_error_ == host.relative_error_
    assert model.reconstruction_err_ == pytest.approx(host.reconstruction_err_, rel=1e-12)
    assert gpu.get(W).dtype == dtype


def test_nmf_transform_custom_start_and_warm_start_on_the_device(rng, gpu):
    X = planted_nonnegative(rng, 50, 30, 3)
    W0, H0 = rng.random((50, 3)), rng.random((3, 30))
    kw = dict(n_components=3, init="custom", max_iter=30, tol=0, device="cuda")
    model = kfactor.NMF(**kw).fit(gpu.put(X), W=gpu.put(W0), H=gpu.put(H0))
    host = kfactor.NMF(**kw).fit(X, W=W0, H=H0)
    np.testing.assert_array_equal(gpu.get(model.components_), host.components_)
    Wt = model.transform(gpu.put(X[:5]))
    assert gpu.is_mine(Wt)
    np.testing.assert_array_equal(gpu.get(Wt), host.transform(X[:5]))
    back = model.inverse_transform(Wt)
    assert gpu.is_mine(back)
    np.testing.assert_allclose(gpu.get(back), gpu.get(Wt) @ host.components_, rtol=1e-12)
    model.set_params(warm_start=True, max_iter=10).fit(gpu.put(X))
    host.set_params(warm_start=True, max_iter=10).fit(X)
    assert model.n_iter_ == 40
    np.testing.assert_array_equal(gpu.get(model.components_), host.components_)


def test_nmf_sparse_input_on_the_device(rng):
    X = sp.random(40, 30, density=0.3, format="csr", random_state=2)
    kw = dict(n_components=3, init="random", max_iter=30, tol=0, random_state=5)
    gpu = kfactor.NMF(device="cuda", **kw).fit(X)
    cpu = kfactor.NMF(device="cpu", **kw).fit(X)
    assert isinstance(gpu.components_, np.ndarray)
    np.testing.assert_allclose(gpu.components_, cpu.components_, rtol=1e-8, atol=1e-12)


def test_nmf_checks_cuda_arrays_on_the_device(gpu):
    ones = np.ones((6, 5))
    for bad, match in (
        (np.full((6, 5), np.nan), "NaN"),
        (-ones, "Negative"),
        (np.ones((6, 5, 2)), "dimension"),
        (np.ones((0, 5)), "sample"),
    ):
        with pytest.raises(ValueError, match=match):
            kfactor.NMF(2, device="cuda").fit(gpu.put(bad))
    with pytest.raises(ValueError, match="CUDA array"):
        kfactor.NMF(2, device="cpu").fit(gpu.put(ones))
    # Integer and strided arrays are converted once, as numpy ones are.
    ints = kfactor.NMF(2, max_iter=5, device="cuda", random_state=1).fit(gpu.put(np.arange(12).reshape(4, 3)))
    assert gpu.get(ints.components_).dtype == np.float64
    X = planted_nonnegative(np.random.default_rng(4), 30, 40, 3)
    kw = dict(n_components=3, max_iter=20, init="random", random_state=1, device="cuda")
    a = kfactor.NMF(**kw).fit(gpu.put(X)[:, ::2])
    b = kfactor.NMF(**kw).fit(np.ascontiguousarray(X[:, ::2]))
    np.testing.assert_array_equal(gpu.get(a.components_), b.components_)


def test_save_and_load_of_a_model_fitted_on_the_device(rng, gpu, tmp_path):
    X = planted_nonnegative(rng, 30, 20, 3) + 0.01
    kw = dict(n_components=3, init="random", tol=0, random_state=9, device="cuda")
    whole = kfactor.NMF(max_iter=10, **kw).fit(gpu.put(X))
    half = kfactor.NMF(max_iter=5, **kw).fit(gpu.put(X))
    half.save(tmp_path / "nmf.h5")
    loaded = kfactor.NMF.load(tmp_path / "nmf.h5", max_iter=5, tol=0, warm_start=True, device="cuda")
    np.testing.assert_array_equal(loaded.components_, gpu.get(half.components_))
    loaded.fit(X)
    np.testing.assert_array_equal(loaded.components_, gpu.get(whole.components_))


def test_sddmm_on_device_arrays(rng, gpu):
    S = sp.random(30, 20, density=0.2, format="csr", random_state=4)
    A, B = rng.random((30, 5)), rng.random((20, 5))
    Ad, Bd = gpu.put(A), gpu.put(B)
    P = kfactor.sddmm(S, Ad, Bd, device="cuda")
    assert _core._last_input_address() == gpu.address(Ad)
    expected = S.multiply(A @ B.T).tocsr()
    np.testing.assert_allclose(P.toarray(), expected.toarray(), rtol=1e-12)
    if isinstance(gpu, Cupy):
        import cupyx.scipy.sparse as csp

        Pd = kfactor.sddmm(csp.csr_matrix(S), Ad, Bd, device="cuda")
        assert isinstance(Pd, csp.csr_matrix)
        np.testing.assert_allclose(Pd.get().toarray(), expected.toarray(), rtol=1e-12)


def test_host_readers_refuse_cuda_arrays(gpu, rng):
    C = gpu.put((rng.random((20, 10)) < 0.3).astype(np.float64))
    with pytest.raises(ValueError, match="on the host"):
        kfactor.BooleanMF(2, device="cuda").fit(C)
    with pytest.raises(ValueError, match="on the host"):
        kfactor.ManifoldNMF(2, device="cuda").fit(C)
    with pytest.raises(ValueError, match="on the host"):
        kfactor.ALS(factors=2, device="cuda").fit(C)


def test_device_ids():
    _core.check_device("cuda:0")
    kfactor.NMF(2, max_iter=2, device="cuda:0").fit(np.ones((4, 3)))
    with pytest.raises(ValueError, match="cuda:7"):
        kfactor.NMF(2, device="cuda:7").fit(np.ones((4, 3)))
