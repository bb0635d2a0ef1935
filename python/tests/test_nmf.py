"""kfactor.NMF: results, zero-copy input, errors, the C++ command's
results, restart bit for bit, progress and the GIL."""

import os
import subprocess
import threading
import time

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import kfactor
from kfactor import _core
from conftest import CLI_DEVICE, planted_nonnegative


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("algorithm", ["hals", "alo", "mu"])
def test_fits_a_planted_matrix(rng, algorithm, device):
    X = planted_nonnegative(rng, 60, 40, 4)
    model = kfactor.NMF(4, algorithm=algorithm, init="random", max_iter=300, tol=0, random_state=3, device=device)
    W = model.fit_transform(X)
    H = model.components_
    assert W.shape == (60, 4) and H.shape == (4, 40)
    assert W.min() >= 0 and H.min() >= 0
    assert model.n_iter_ == 300
    err = np.linalg.norm(X - W @ H)
    assert model.reconstruction_err_ == pytest.approx(err, rel=1e-6, abs=1e-9)
    assert model.relative_error_ < (0.05 if algorithm == "mu" else 1e-2)
    errors = model.history_["values"][:, list(model.history_["names"]).index("relative_error")]
    assert errors[-1] < errors[0]


def test_dense_input_is_used_in_place(rng):
    for dtype in (np.float64, np.float32):
        X = planted_nonnegative(rng, 30, 20, 3, dtype)
        W = kfactor.NMF(3, max_iter=5).fit_transform(X)
        assert _core._last_input_address() == address(X)
        assert W.dtype == dtype


def test_sparse_values_are_used_in_place(rng):
    X = sp.random(50, 40, density=0.2, format="csr", random_state=1, dtype=np.float64)
    X.indptr = X.indptr.astype(np.int64)
    kfactor.NMF(3, max_iter=5, init="random").fit(X)
    assert _core._last_input_address() == address(X.data)


def test_non_contiguous_and_integer_inputs_are_converted(rng):
    X = planted_nonnegative(rng, 30, 40, 3)
    view = X[:, ::2]
    a = kfactor.NMF(3, max_iter=20, init="random", random_state=1).fit(view)
    assert _core._last_input_address() != address(X)
    b = kfactor.NMF(3, max_iter=20, init="random", random_state=1).fit(np.ascontiguousarray(view))
    np.testing.assert_array_equal(a.components_, b.components_)
    ints = kfactor.NMF(2, max_iter=5).fit(np.arange(12).reshape(4, 3))
    assert ints.components_.dtype == np.float64


def test_sparse_and_dense_inputs_agree(rng, device):
    X = sp.random(40, 30, density=0.3, format="csr", random_state=2)
    kw = dict(n_components=3, init="random", max_iter=30, tol=0, random_state=5, device=device)
    a = kfactor.NMF(**kw).fit(X)
    b = kfactor.NMF(**kw).fit(X.toarray())
    np.testing.assert_allclose(a.components_, b.components_, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.full((5, 4), np.nan), "NaN"),
        (-np.ones((5, 4)), "Negative"),
        (np.ones((5, 4, 2)), "dim"),
        (np.ones((5, 4)) * 1j, "Complex"),
        (np.ones((0, 4)), "sample"),
    ],
)
def test_bad_inputs_raise_value_error(bad, match, device):
    with pytest.raises(ValueError, match=match):
        kfactor.NMF(2, device=device).fit(bad)


def test_bad_options_raise_value_error_naming_them():
    X = np.ones((6, 5))
    with pytest.raises(ValueError, match="algorithm"):
        kfactor.NMF(2, algorithm="xyz").fit(X)
    with pytest.raises(ValueError, match="rank 9 exceeds"):
        kfactor.NMF(9).fit(X)
    with pytest.raises(ValueError, match="l1_ratio"):
        kfactor.NMF(2, l1_ratio=2.0).fit(X)
    with pytest.raises(ValueError, match="beta_loss"):
        kfactor.NMF(2, beta_loss="cosine").fit(X)
    with pytest.raises(ValueError, match="custom"):
        kfactor.NMF(2, init="custom").fit(X)


def test_custom_init_and_penalties(rng, device):
    X = planted_nonnegative(rng, 30, 20, 3)
    W0, H0 = rng.random((30, 3)), rng.random((3, 20))
    kw = dict(n_components=3, init="custom", max_iter=50, tol=0, device=device)
    a = kfactor.NMF(**kw).fit(X, W=W0, H=H0)
    b = kfactor.NMF(**kw).fit(X, W=W0, H=H0)
    np.testing.assert_array_equal(a.components_, b.components_)
    sparse = kfactor.NMF(alpha_W=0.01, l1_ratio=1.0, **kw).fit(X, W=W0, H=H0)
    assert (sparse.components_ < 1e-9).sum() + (sparse._W < 1e-9).sum() > (a.components_ < 1e-9).sum() + (
        a._W < 1e-9
    ).sum()


def test_kl_and_is_losses_need_mu(rng, device):
    X = planted_nonnegative(rng, 20, 15, 2) + 0.1
    kl = kfactor.NMF(2, algorithm="mu", beta_loss="kullback-leibler", max_iter=50, device=device).fit(X)
    assert np.isfinite(kl.reconstruction_err_)
    with pytest.raises(ValueError, match="mu"):
        kfactor.NMF(2, algorithm="hals", beta_loss="itakura-saito").fit(X)


def test_transform_recovers_w_and_takes_one_sample(rng, device):
    X = planted_nonnegative(rng, 50, 30, 3)
    model = kfactor.NMF(3, init="random", max_iter=400, tol=0, random_state=1, device=device)
    W = model.fit_transform(X)
    Wt = model.transform(X)
    assert np.linalg.norm(X - Wt @ model.components_) <= np.linalg.norm(X - W @ model.components_) * 1.01 + 1e-6
    one = model.transform(X[:1])
    np.testing.assert_allclose(one, Wt[:1], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(model.inverse_transform(W), W @ model.components_, rtol=1e-12)
    with pytest.raises(ValueError, match="features"):
        model.transform(X[:, :10])


def test_results_equal_the_command_line(rng, cli, tmp_path):
    X = planted_nonnegative(rng, 25, 18, 3) + rng.random((25, 18)) * 0.01
    path = tmp_path / "x.mtx"
    scipy.io.mmwrite(str(path), X, precision=17)
    prefix = tmp_path / "out"
    env = dict(os.environ, OMP_NUM_THREADS=str(kfactor.build_info()["threads"]))
    subprocess.run(
        [cli, "nmf", "--input", str(path), "--rank", "3", "--iters", "25", "--seed", "11", "--algorithm", "hals",
         "--init", "random", "--output", str(prefix), "--quiet"],
        check=True, env=env, capture_output=True,
    )
    W_cli = scipy.io.mmread(str(prefix) + "_W.mtx")
    H_cli = scipy.io.mmread(str(prefix) + "_H.mtx")
    X_read = scipy.io.mmread(str(path))
    model = kfactor.NMF(3, algorithm="hals", init="random", max_iter=25, tol=0, random_state=11, device=CLI_DEVICE)
    W = model.fit_transform(np.ascontiguousarray(X_read))
    # The command writes shortest round-trip decimals: the same doubles.
    np.testing.assert_array_equal(W, W_cli)
    np.testing.assert_array_equal(model.components_, H_cli)


@pytest.mark.parametrize("algorithm", ["hals", "alo", "mu"])
def test_save_load_continues_bit_for_bit(rng, tmp_path, algorithm, device):
    X = planted_nonnegative(rng, 40, 30, 4) + 0.01
    kw = dict(n_components=4, algorithm=algorithm, init="random", tol=0, random_state=9, device=device)
    whole = kfactor.NMF(max_iter=10, **kw).fit(X)
    half = kfactor.NMF(max_iter=5, **kw).fit(X)
    path = tmp_path / "nmf.h5"
    half.save(path)
    loaded = kfactor.NMF.load(path, max_iter=5, tol=0, warm_start=True, device=device)
    assert loaded.n_iter_ == 5
    np.testing.assert_array_equal(loaded.components_, half.components_)
    loaded.fit(X)
    assert loaded.n_iter_ == 10
    np.testing.assert_array_equal(loaded.components_, whole.components_)
    np.testing.assert_array_equal(loaded.transform(X[:3]), whole.set_params(max_iter=5).transform(X[:3]))


def test_loads_a_checkpoint_of_the_command_line(rng, cli, tmp_path):
    X = planted_nonnegative(rng, 20, 15, 2)
    path = tmp_path / "x.mtx"
    scipy.io.mmwrite(str(path), X, precision=17)
    ckpt = tmp_path / "run.h5"
    env = dict(os.environ, OMP_NUM_THREADS=str(kfactor.build_info()["threads"]))
    subprocess.run(
        [cli, "nmf", "--input", str(path), "--rank", "2", "--iters", "8", "--seed", "4", "--algorithm", "alo",
         "--checkpoint", str(ckpt), "--quiet"],
        check=True, env=env, capture_output=True,
    )
    model = kfactor.NMF.load(ckpt)
    assert model.n_iter_ == 8 and model.algorithm == "alo" and model.random_state == 4
    ours = kfactor.NMF(2, algorithm="alo", init="random", max_iter=8, tol=0, random_state=4, device=CLI_DEVICE).fit(
        np.ascontiguousarray(scipy.io.mmread(str(path)))
    )
    np.testing.assert_array_equal(model.components_, ours.components_)


def test_load_refuses_other_files(tmp_path):
    bad = tmp_path / "bad.h5"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="bad.h5"):
        kfactor.NMF.load(bad)


def test_callback_and_verbose(rng, capsys, device):
    X = planted_nonnegative(rng, 30, 20, 3)
    seen = []

    def callback(iteration, metrics):
        seen.append((iteration, metrics["relative_error"]))
        return iteration == 3

    model = kfactor.NMF(3, max_iter=50, tol=0, callback=callback, verbose=True, device=device).fit(X)
    assert model.n_iter_ == 3 and [s[0] for s in seen] == [1, 2, 3]
    assert "NMF: iteration 3" in capsys.readouterr().out

    def broken(iteration, metrics):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        kfactor.NMF(3, max_iter=50, callback=broken, device=device).fit(X)


def test_the_gil_is_released_while_fitting(rng):
    X = planted_nonnegative(rng, 400, 300, 20)
    t0 = time.perf_counter()
    kfactor.NMF(20, algorithm="hals", init="random", max_iter=20, tol=0).fit(X)
    per_epoch = (time.perf_counter() - t0) / 20
    epochs = int(min(max(0.5 / per_epoch, 20), 100000))  # a fit of about half a second
    model = kfactor.NMF(20, algorithm="hals", init="random", max_iter=epochs, tol=0)
    fit = threading.Thread(target=model.fit, args=(X,))
    gaps, last = [], time.perf_counter()
    start = last
    fit.start()
    while fit.is_alive():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
        time.sleep(0.001)
    fit.join()
    duration = time.perf_counter() - start
    assert model.n_iter_ == epochs
    # Holding the GIL would stall this loop for the whole fit.
    assert max(gaps) < duration / 2, (max(gaps), duration)
