"""kfactor.BooleanMF: Boolean matrix factorization C ~ A o B (OR of ANDs)
by CuBin's parallel randomized local search."""

import numpy as np

from . import _core
from ._base import BaseEstimator, check_device, check_is_fitted, check_X, is_sparse, progress, seed_of


class BooleanMF(BaseEstimator):
    """C (n_samples x n_features, 0/1; any nonzero counts as a one) ~ A o B
    with A (n_samples x n_components) and B = components_ (n_components x
    n_features) Boolean, (A o B)_ij = OR_l A_il B_lj.

    n_components : the Boolean rank k (at most min(n_samples, n_features)).
    max_iter : search iterations (each proposes changes to a batch of
        columns of B, then of rows of A).
    tol : stop when the relative error changes by at most tol (0: never).
    target : stop once the relative error is at most target (None: never).
    init : "cover" (a greedy Asso-style cover, the best start) | "rows" |
        "dost" | "density100" | "density".
    batch, flip_prob, temperature, temp_step, temp_factor, weight_ones,
    every_line_changed : the search's knobs (docs/python/booleanmf.md).
    random_state, device, verbose, callback : as kfactor.NMF.

    There is no transform of new samples (the search fits A and B
    together): fit_transform returns A for the training samples.

    Fitted: components_ (uint8), A_ (uint8), n_iter_, relative_error_
    (wrong entries / all entries), reconstruction_err_ (wrong entries),
    history_.
    """

    def __init__(
        self,
        n_components=None,
        *,
        max_iter=1000,
        tol=0.0,
        target=None,
        init="cover",
        batch=4000,
        flip_prob=0.125,
        temperature=0.0,
        temp_step=2**31 - 1,
        temp_factor=0.99,
        weight_ones=1.0,
        every_line_changed=1000,
        random_state=None,
        device="cpu",
        verbose=0,
        callback=None,
    ):
        self.n_components = n_components
        self.max_iter = max_iter
        self.tol = tol
        self.target = target
        self.init = init
        self.batch = batch
        self.flip_prob = flip_prob
        self.temperature = temperature
        self.temp_step = temp_step
        self.temp_factor = temp_factor
        self.weight_ones = weight_ones
        self.every_line_changed = every_line_changed
        self.random_state = random_state
        self.device = device
        self.verbose = verbose
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    def _more_tags(self):
        return {"requires_positive_X": True}

    def fit(self, X, y=None):
        """Fits A and B to the ones of X."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Fits A and B and returns A (n_samples x n_components, uint8)."""
        device = check_device(self.device)
        X = check_X(self, X, reset=True, non_negative=True)
        m, n = X.shape
        k = self.n_components if self.n_components is not None else min(m, n)
        if is_sparse(X):
            coo = X.tocoo()
            keep = coo.data != 0
            rows, cols = coo.row[keep], coo.col[keep]
        else:
            rows, cols = np.nonzero(X)
        options = {
            "rank": int(k),
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "target": None if self.target is None else float(self.target),
            "init": "rows" if self.init == "sample_rows" else str(self.init),
            "batch": int(self.batch),
            "flip_prob": float(self.flip_prob),
            "temperature": float(self.temperature),
            "temp_step": int(self.temp_step),
            "temp_factor": float(self.temp_factor),
            "weight_ones": float(self.weight_ones),
            "every_line_changed": int(self.every_line_changed),
            "seed": seed_of(self.random_state),
        }
        out = _core.bmf_fit(
            m, n, np.ascontiguousarray(rows, dtype=np.int32), np.ascontiguousarray(cols, dtype=np.int32), options,
            progress(self.verbose, self.callback, "BooleanMF"), device,
        )
        metrics = out["report"]["metrics"]
        self.A_ = out["A"]
        self.components_ = out["B"]
        self.n_components_ = int(k)
        self.n_iter_ = int(out["iteration"])
        self.relative_error_ = float(metrics["relative_error"])
        self.reconstruction_err_ = float(metrics["errors"])
        self.history_ = out["history"]
        return self.A_

    def inverse_transform(self, A):
        """A o B as a 0/1 uint8 array (n_samples x n_features)."""
        check_is_fitted(self)
        A = np.asarray(A, dtype=np.uint8)
        return (A.astype(np.int32) @ self.components_.astype(np.int32) > 0).astype(np.uint8)
