"""Ranking metrics and splits for recommenders, with the `implicit`
library's definitions and names (implicit.evaluation)."""

import numpy as np

from . import _core
from ._base import canonical_csr, check_device, csr_parts


def _factors(model):
    if not hasattr(model, "user_factors"):
        raise ValueError("the model must be a fitted kfactor.ALS (user_factors and item_factors)")
    return model.user_factors, model.item_factors


def ranking_metrics_at_k(model, train_user_items, test_user_items, K=10, show_progress=False, device="cpu"):
    """precision, recall, map, ndcg and auc at K of a fitted ALS on the
    positive entries of test_user_items, each user's training items left
    out of its ranking (implicit's definitions: precision divides by
    min(K, test items))."""
    X, Y = _factors(model)
    train = canonical_csr(train_user_items, dtype=X.dtype)
    test = canonical_csr(test_user_items, dtype=X.dtype)
    for name, M in (("train_user_items", train), ("test_user_items", test)):
        if M.shape[0] > X.shape[0] or M.shape[1] != Y.shape[0]:
            raise ValueError(f"{name} is {M.shape[0]} x {M.shape[1]}; the model has {X.shape[0]} users and {Y.shape[0]} items")
    return _core.ranking_metrics(X, Y, *csr_parts(train)[:3], *csr_parts(test)[:3], int(K), check_device(device))


def precision_at_k(model, train_user_items, test_user_items, K=10, show_progress=False):
    """ranking_metrics_at_k(...)["precision"]."""
    return ranking_metrics_at_k(model, train_user_items, test_user_items, K)["precision"]


def recall_at_k(model, train_user_items, test_user_items, K=10, show_progress=False):
    """ranking_metrics_at_k(...)["recall"] (not in implicit)."""
    return ranking_metrics_at_k(model, train_user_items, test_user_items, K)["recall"]


def mean_average_precision_at_k(model, train_user_items, test_user_items, K=10, show_progress=False):
    """ranking_metrics_at_k(...)["map"]."""
    return ranking_metrics_at_k(model, train_user_items, test_user_items, K)["map"]


def ndcg_at_k(model, train_user_items, test_user_items, K=10, show_progress=False):
    """ranking_metrics_at_k(...)["ndcg"]."""
    return ranking_metrics_at_k(model, train_user_items, test_user_items, K)["ndcg"]


def AUC_at_k(model, train_user_items, test_user_items, K=10, show_progress=False):
    """ranking_metrics_at_k(...)["auc"]."""
    return ranking_metrics_at_k(model, train_user_items, test_user_items, K)["auc"]


def _csr(parts, shape, dtype):
    import scipy.sparse as sp

    indptr, indices, data = parts
    return sp.csr_matrix((data.astype(dtype, copy=False), indices, indptr), shape=shape)


def _seed(random_state):
    if random_state is None:
        return 0
    if not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ValueError(f"random_state must be a non-negative integer, got {random_state!r}")
    return int(random_state)


def train_test_split(ratings, train_percentage=0.8, random_state=None):
    """(train, test) CSR matrices of ratings' shape: each entry goes to the
    test set with probability 1 - train_percentage, by a draw keyed on the
    seed and the entry's (row, column), so the split does not depend on the
    storage order (None: seed 0)."""
    R = canonical_csr(ratings)
    if not 0.0 < train_percentage <= 1.0:
        raise ValueError(f"train_percentage must be in (0, 1], got {train_percentage}")
    train, test = _core.train_test_split(*csr_parts(R), 1.0 - float(train_percentage), _seed(random_state))
    return _csr(train, R.shape, R.dtype), _csr(test, R.shape, R.dtype)


def leave_k_out_split(ratings, K=1, random_state=None):
    """(train, test): K random entries of every user with more than K go to
    the test set (None: seed 0)."""
    R = canonical_csr(ratings)
    train, test = _core.leave_k_out(*csr_parts(R), int(K), _seed(random_state))
    return _csr(train, R.shape, R.dtype), _csr(test, R.shape, R.dtype)
