"""kfactor.ManifoldNMF: manifold-regularized NMF of observed ratings
(CUMNMF), with user and item similarity graphs."""

import numpy as np

from . import _core
from ._base import (
    BaseEstimator,
    NonNegativeInput,
    canonical_csr,
    check_device,
    check_is_fitted,
    check_X,
    csr_parts,
    progress,
    seed_of,
)


class ManifoldNMF(NonNegativeInput, BaseEstimator):
    """Ratings R (users x items, sparse: the stored entries are the
    observed ones) ~ W H^T with W, H >= 0, plus graph terms that pull
    similar users' (items') factor rows together:
    lambda_W Tr(W^T L W) + lambda_H Tr(H^T Lb H), L and Lb the Laplacians of
    the user and item graphs.

    n_components : the rank r.
    objective : "euclid" (squared error) or "kl" (generalized KL divergence).
    lambda_W, lambda_H : weights of the user and item graph terms (0: none).
    n_neighbors, graph_weighting : the kNN graphs built from R's rows
        (users) and columns (items) when fit() gets no graph and the lambda
        is positive; weighting "binary" | "heat" | "dot".
    max_iter, tol, random_state, dtype, device, verbose, callback: as kfactor.NMF.
    warm_start : fit continues the fitted W and H (the same X and graphs)
        for max_iter more iterations, exactly as an uninterrupted fit would
        have.

    There is no transform of new users; fit_transform returns W.

    Fitted: user_factors_ = W (users x r), components_ = H^T (r x items),
    n_iter_, objective_, history_.

    save(path) writes the fitted model as an HDF5 checkpoint of the library
    (the layout `kfactor mnmf --checkpoint` writes); ManifoldNMF.load(path)
    reads it back, and with warm_start=True its fit continues bit for bit.
    """

    def __init__(
        self,
        n_components=10,
        *,
        objective="euclid",
        lambda_W=0.0,
        lambda_H=0.0,
        n_neighbors=15,
        graph_weighting="binary",
        max_iter=100,
        tol=0.0,
        random_state=None,
        dtype=None,
        device="cpu",
        verbose=0,
        callback=None,
        warm_start=False,
    ):
        self.n_components = n_components
        self.objective = objective
        self.lambda_W = lambda_W
        self.lambda_H = lambda_H
        self.n_neighbors = n_neighbors
        self.graph_weighting = graph_weighting
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.dtype = dtype
        self.device = device
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    def fit(self, X, y=None, user_graph=None, item_graph=None):
        """Fits W and H to the stored entries of X; user_graph (users x
        users) and item_graph (items x items) are symmetric non-negative
        similarity matrices (None: kNN graphs when the lambda is positive)."""
        self.fit_transform(X, user_graph=user_graph, item_graph=item_graph)
        return self

    def fit_transform(self, X, y=None, user_graph=None, item_graph=None):
        """Fits and returns W (users x n_components)."""
        device = check_device(self.device)
        continuing = self.warm_start and hasattr(self, "_fit_state")
        dtype = self.components_.dtype if continuing else self.dtype
        X = check_X(self, X, reset=not continuing, dtype=dtype, non_negative=True, host_only=True)
        R = canonical_csr(X, dtype=X.dtype)
        if continuing:
            if R.shape != self._shape:
                raise ValueError(f"warm_start: X is {R.shape[0]} x {R.shape[1]}, the fitted model's "
                                 f"{self._shape[0]} x {self._shape[1]}")
            rank, seed, state = self.n_components_, self._seed, self._fit_state
            max_iter = self.n_iter_ + int(self.max_iter)
        else:
            rank, seed, state, max_iter = int(self.n_components), seed_of(self.random_state), None, int(self.max_iter)
        graphs = [None if g is None else csr_parts(canonical_csr(g, dtype=R.dtype))[:3] for g in (user_graph, item_graph)]
        options = {
            "objective": str(self.objective),
            "rank": rank,
            "lambda_w": float(self.lambda_W),
            "lambda_h": float(self.lambda_H),
            "n_neighbors": int(self.n_neighbors),
            "graph_weighting": str(self.graph_weighting),
            "max_iter": max_iter,
            "tol": float(self.tol),
            "seed": seed,
        }
        out = _core.mnmf_fit(
            *csr_parts(R), options, graphs[0], graphs[1], state,
            progress(self.verbose, self.callback, "ManifoldNMF"), device,
        )
        self.user_factors_ = out["W"]
        self.components_ = out["H"].T
        self.n_components_ = rank
        self.n_iter_ = int(out["iteration"])
        self.objective_ = float(out["report"]["metrics"].get("objective", np.nan))
        self.history_ = out["history"]
        self._fit_state = {"fields": out["fields"], "history": out["history"]}
        self._checkpoint = {"options": out["options"], "fingerprint": out["fingerprint"]}
        self._seed = seed
        self._shape = R.shape
        return self.user_factors_

    def save(self, path):
        """Writes the fitted model as an HDF5 checkpoint of the library."""
        check_is_fitted(self)
        precision = "float" if self.components_.dtype == np.float32 else "double"
        _core.checkpoint_save(
            str(path), "mnmf", precision, self.n_components_, self._checkpoint["options"],
            self._checkpoint["fingerprint"], self._fit_state["fields"], self._fit_state["history"],
        )

    @classmethod
    def load(cls, path, **params):
        """A fitted ManifoldNMF from a checkpoint written by save() or by
        `kfactor mnmf --checkpoint`; `params` set estimator parameters
        beyond the stored ones (pass max_iter and tol with warm_start=True
        to continue)."""
        out = _core.checkpoint_load(str(path), "mnmf")
        o, fields = out["options"], out["fields"]
        est = cls(
            n_components=int(out["rank"]),
            objective=o["objective"],
            lambda_W=float(o["lambda_w"]),
            lambda_H=float(o["lambda_h"]),
            n_neighbors=int(o.get("neighbors", 15)),
            graph_weighting=o.get("weighting", "binary"),
            random_state=int(o["seed"]),
        )
        est.set_params(**params)
        est.user_factors_ = fields["W"]
        est.components_ = np.ascontiguousarray(fields["H"].T)
        est.n_components_ = int(out["rank"])
        est.n_features_in_ = est.components_.shape[1]
        est.n_iter_ = int(fields["iteration"])
        history = out["history"]
        names = list(history["names"])
        values = history["values"]
        est.objective_ = float(values[-1, names.index("objective")]) if len(values) and "objective" in names else np.nan
        est.history_ = history
        est._fit_state = {"fields": fields, "history": history}
        est._checkpoint = {"options": o, "fingerprint": out["fingerprint"]}
        est._seed = int(o["seed"])
        est._shape = (fields["W"].shape[0], fields["H"].shape[0])
        return est

    def inverse_transform(self, W):
        """W H^T as a dense array (predicted ratings for every user and item)."""
        check_is_fitted(self)
        return np.asarray(W) @ self.components_
