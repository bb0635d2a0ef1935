"""kfactor.ALS with implicit's conventions, the ranking metrics and the splits."""

import os
import subprocess

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import kfactor
from conftest import CLI_DEVICE, interactions


@pytest.fixture
def counts(rng):
    return interactions(rng, 60, 40, 8)


def fitted(counts, **kw):
    params = dict(factors=4, regularization=0.05, iterations=10, random_state=1)
    params.update(kw)
    return kfactor.ALS(**params).fit(counts)


def test_implicit_fit_decreases_the_loss(counts, device):
    model = fitted(counts, device=device)
    assert model.user_factors.shape == (60, 4) and model.item_factors.shape == (40, 4)
    assert model.user_factors.dtype == np.float32
    names = list(model.history_["names"])
    loss = model.history_["values"][:, names.index("loss")]
    assert np.all(np.diff(loss) <= 1e-6 * abs(loss[0]))
    assert model.n_iter_ == 10


def test_recommend_ranks_unseen_items_by_score(counts, device):
    model = fitted(counts, device=device)
    user = 5
    ids, scores = model.recommend(user, counts[user], N=7)
    assert ids.shape == (7,) and np.all(np.diff(scores) <= 0)
    seen = set(counts[user].indices)
    assert not seen & set(ids)
    expected = model.item_factors @ model.user_factors[user]
    expected[list(seen)] = -np.inf
    np.testing.assert_array_equal(ids, np.argsort(-expected, kind="stable")[:7])
    np.testing.assert_allclose(scores, expected[ids], rtol=1e-5)
    # The taste groups: recommendations come from the user's own group.
    assert np.mean(ids % 2 == user % 2) >= 0.8
    batch_ids, _ = model.recommend(np.array([5, 6]), counts[[5, 6]], N=7)
    np.testing.assert_array_equal(batch_ids[0], ids)
    all_ids, _ = model.recommend(user, counts[user], N=7, filter_already_liked_items=False)
    assert np.argmax(expected) in all_ids or set(all_ids) & seen


def test_recommend_pads_short_lists(counts, device):
    model = fitted(counts, device=device)
    ids, scores = model.recommend(0, counts[0], N=40)
    assert (ids == -1).sum() == counts[0].nnz and np.isneginf(scores[ids == -1]).all()


def test_similar_items_by_cosine(counts, device):
    model = fitted(counts, device=device)
    ids, scores = model.similar_items(3, N=5)
    Y = model.item_factors.astype(np.float64)
    U = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    cos = U @ U[3]
    cos[3] = -np.inf
    np.testing.assert_array_equal(ids, np.argsort(-cos, kind="stable")[:5])
    np.testing.assert_allclose(scores, cos[ids], rtol=1e-4)


def test_recalculate_user_is_the_next_half_step(counts, device):
    model = fitted(counts, iterations=6, device=device)
    again = kfactor.ALS(factors=4, regularization=0.05, iterations=6, random_state=1, device=device).fit(counts)
    np.testing.assert_array_equal(again.user_factors, model.user_factors)
    row = model.recalculate_user(7, counts[7])
    assert row.shape == (4,)
    # Folding in a user's own row barely moves a converged model's factors.
    assert np.linalg.norm(row - model.user_factors[7]) < 0.2 * np.linalg.norm(model.user_factors[7])
    ids, _ = model.recommend(7, counts[7], N=5, recalculate_user=True)
    assert not set(ids) & set(counts[7].indices)


def test_explicit_ratings(rng, device):
    users, items, k = 50, 40, 3
    X, Y = rng.random((users, k)), rng.random((items, k))
    mask = rng.random((users, items)) < 0.5
    R = sp.csr_matrix(np.where(mask, X @ Y.T, 0.0))
    model = kfactor.ALS(factors=3, implicit=False, regularization=1e-4, iterations=30, dtype=np.float64,
                        device=device).fit(R)
    pred = (model.user_factors @ model.item_factors.T)[mask]
    assert np.sqrt(np.mean((pred - (X @ Y.T)[mask]) ** 2)) < 0.05


def test_bad_ratings_raise_value_error(counts):
    bad = counts.copy().astype(np.float32)
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        kfactor.ALS(factors=2).fit(bad)
    with pytest.raises(ValueError, match="regularization|lambda"):
        kfactor.ALS(factors=2, regularization=0).fit(counts)
    with pytest.raises(ValueError, match="fitted|fit"):
        kfactor.ALS().recommend(0, counts[0])


def test_save_load_continues_bit_for_bit(counts, tmp_path, device):
    whole = fitted(counts, iterations=8, device=device)
    half = fitted(counts, iterations=4, device=device)
    half.save(tmp_path / "als.h5")
    loaded = kfactor.ALS.load(tmp_path / "als.h5", iterations=4, warm_start=True, device=device)
    loaded.fit(counts)
    assert loaded.n_iter_ == 8
    np.testing.assert_array_equal(loaded.user_factors, whole.user_factors)
    np.testing.assert_array_equal(loaded.item_factors, whole.item_factors)


@pytest.mark.parametrize("solver", ["cholesky", "cg"])
def test_results_equal_the_command_line(rng, cli, tmp_path, solver):
    # The extension runs the command's code, compiled alike: the same factors
    # to the bit (a module built with other optimization flags, as nanobind's
    # default -Os, rounds differently and runs several times slower).
    counts = interactions(rng, 300, 200, 20)
    path = tmp_path / "counts.mtx"
    scipy.io.mmwrite(str(path), counts, precision=9)
    ckpt = tmp_path / "run.h5"
    env = dict(os.environ, OMP_NUM_THREADS=str(kfactor.build_info()["threads"]))
    subprocess.run(
        [cli, "als", "--implicit", "--input", str(path), "--rank", "16", "--lambda", "0.05", "--alpha", "20",
         "--iters", "6", "--seed", "7", "--precision", "float", "--layout", "csr", "--lambda-weighting", "plain",
         "--solver", solver, "--checkpoint", str(ckpt), "--quiet"],
        check=True, env=env, capture_output=True,
    )
    theirs = kfactor.ALS.load(ckpt)
    ours = kfactor.ALS(factors=16, regularization=0.05, alpha=20.0, iterations=6, solver=solver, random_state=7,
                       device=CLI_DEVICE).fit(
        scipy.io.mmread(str(path)).tocsr()
    )
    assert theirs.n_iter_ == ours.n_iter_ == 6
    np.testing.assert_array_equal(ours.user_factors, theirs.user_factors)
    np.testing.assert_array_equal(ours.item_factors, theirs.item_factors)


def implicit_precision(model, train, test, K):
    """implicit's precision@K: hits over sum of min(K, positives)."""
    hits = total = 0
    for u in range(train.shape[0]):
        positives = set(test[u].indices[test[u].data > 0])
        if not positives:
            continue
        ids, _ = model.recommend(u, train[u], N=K)
        hits += len(positives & set(ids[ids >= 0]))
        total += min(K, len(positives))
    return hits / total


def test_ranking_metrics_and_splits(counts, device):
    train, test = kfactor.train_test_split(counts, train_percentage=0.75, random_state=3)
    assert (train + test - counts).nnz == 0 and train.multiply(test).nnz == 0
    assert 0.1 < test.nnz / counts.nnz < 0.4
    again, _ = kfactor.train_test_split(counts, train_percentage=0.75, random_state=3)
    assert (again != train).nnz == 0
    model = fitted(train, device=device)
    metrics = kfactor.ranking_metrics_at_k(model, train, test, K=5)
    assert set(metrics) >= {"precision", "map", "ndcg", "auc", "recall"}
    assert metrics["precision"] == pytest.approx(implicit_precision(model, train, test, 5), rel=1e-12)
    assert kfactor.precision_at_k(model, train, test, K=5) == metrics["precision"]
    assert kfactor.ndcg_at_k(model, train, test, K=5) == metrics["ndcg"]
    assert 0.5 < metrics["auc"] <= 1.0

    train, test = kfactor.leave_k_out_split(counts, K=2, random_state=4)
    assert np.all(np.diff(test.indptr) == 2)
    assert (train + test - counts).nnz == 0
