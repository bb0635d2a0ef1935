"""kfactor.ALS: alternating least squares for recommenders with the
conventions of the `implicit` library (fit(user_items), recommend,
similar_items, user_factors / item_factors), for implicit feedback
(interaction counts) or explicit ratings (implicit=False)."""

import numpy as np

from . import _core
from ._base import (
    BaseEstimator,
    NotFittedError,
    canonical_csr,
    check_device,
    csr_parts,
    is_sparse,
    on_cuda,
    progress,
    seed_of,
)


class ALS(BaseEstimator):
    """R (users x items, sparse) ~ X Y^T.

    factors : the rank (implicit's `factors`).
    regularization : lambda (implicit's `regularization`; > 0).
    alpha : implicit feedback's confidence scale, c = 1 + alpha r
        (implicit's alpha; kfactor's default 40 is Hu et al.'s).
    iterations : ALS sweeps (implicit's `iterations`).
    implicit : True for interaction counts (Hu, Koren, Volinsky), False for
        explicit ratings (the loss over the stored ratings only).
    weighting : "nnz" (lambda times each row's count, ALS-WR) or "plain"
        (lambda alone, as implicit).
    confidence : "linear" | "log" (c = 1 + alpha log(1 + r / epsilon)).
    solver : "cholesky" (exact) or "cg" (implicit's conjugate gradient,
        cg_steps steps).
    tol : stop when the loss changes by at most tol relative (0: never).
    random_state, dtype, device, verbose, callback, warm_start: as kfactor.NMF.

    Fitted: user_factors (users x factors), item_factors (items x factors),
    n_iter_, loss_ (the final training loss), history_.
    """

    def __init__(
        self,
        factors=100,
        *,
        regularization=0.01,
        alpha=40.0,
        iterations=15,
        implicit=True,
        weighting="plain",
        confidence="linear",
        epsilon=1.0,
        solver="cholesky",
        cg_steps=3,
        tol=0.0,
        random_state=None,
        dtype=np.float32,
        device="cpu",
        verbose=0,
        callback=None,
        warm_start=False,
    ):
        self.factors = factors
        self.regularization = regularization
        self.alpha = alpha
        self.iterations = iterations
        self.implicit = implicit
        self.weighting = weighting
        self.confidence = confidence
        self.epsilon = epsilon
        self.solver = solver
        self.cg_steps = cg_steps
        self.tol = tol
        self.random_state = random_state
        self.dtype = dtype
        self.device = device
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start

    def _options(self, seed, max_iter):
        return {
            "rank": int(self.factors),
            "regularization": float(self.regularization),
            "alpha": float(self.alpha),
            "max_iter": int(max_iter),
            "implicit": bool(self.implicit),
            "weighting": str(self.weighting),
            "confidence": str(self.confidence),
            "epsilon": float(self.epsilon),
            "solver": str(self.solver),
            "cg_steps": int(self.cg_steps),
            "tol": float(self.tol),
            "seed": int(seed),
            "layout": "csr",
        }

    def _check_fitted(self):
        if not hasattr(self, "user_factors"):
            raise NotFittedError("This ALS instance is not fitted yet; call 'fit' first.")

    def _ratings(self, R, dtype):
        if on_cuda(R):
            raise ValueError("ALS reads user_items on the host: pass a scipy.sparse matrix (device='cuda' still runs "
                             "the solver on the GPU)")
        if not is_sparse(R):
            R = np.asarray(R)
            if R.ndim != 2:
                raise ValueError(f"user_items must be a 2-D matrix, got {R.ndim} dimension(s)")
        return canonical_csr(R, dtype=np.dtype(dtype))

    def fit(self, user_items, show_progress=False):
        """Fits the factors to user_items (users x items, scipy.sparse;
        interaction counts when implicit, else ratings)."""
        device = check_device(self.device)
        dtype = np.dtype(self.dtype).type
        R = self._ratings(user_items, dtype)
        continuing = self.warm_start and hasattr(self, "user_factors")
        if continuing:
            state = {"X": self.user_factors, "Y": self.item_factors, **self._state}
            seed, max_iter = self._state["seed"], self._state["iteration"] + self.iterations
        else:
            state, seed, max_iter = None, seed_of(self.random_state), self.iterations
        options = self._options(seed, max_iter)
        observe = progress(self.verbose or show_progress, self.callback, "ALS")
        out = _core.als_fit(*csr_parts(R), options, state, observe, device)
        self.user_factors = out["X"]
        self.item_factors = out["Y"]
        self.n_iter_ = int(out["iteration"])
        self._state = {"iteration": out["iteration"], "seed": out["seed"], "history": out["history"]}
        self._options_fitted = options
        self._fingerprint = out["fingerprint"]
        self.history_ = out["history"]
        self.loss_ = out["report"]["metrics"].get("loss", out["report"]["metrics"].get("train_rmse", np.nan))
        return self

    @property
    def user_factors_(self):
        return self.user_factors

    @property
    def item_factors_(self):
        return self.item_factors

    def recalculate_user(self, userid, user_items):
        """Factor rows of users from their interactions (rows of
        user_items, one per id in userid) with the item factors fixed: one
        ALS user half-step, so a training user gets the row the next sweep
        would give it."""
        self._check_fitted()
        single = np.isscalar(userid)
        R = self._ratings(user_items, self.item_factors.dtype)
        if R.shape[1] != self.item_factors.shape[0]:
            raise ValueError(f"user_items has {R.shape[1]} items, the model {self.item_factors.shape[0]}")
        X = _core.als_fold_in(self.item_factors, self._options_fitted, *csr_parts(R)[:3], check_device(self.device))
        return X[0] if single else X

    def recommend(self, userid, user_items, N=10, filter_already_liked_items=True, recalculate_user=False):
        """The N best items for userid (an id or an array of ids): (ids,
        scores), each of shape (N,) or (len(userid), N). user_items holds
        the rows of those users (as implicit): their items are left out with
        filter_already_liked_items, and their factors recomputed from them
        with recalculate_user. Fewer than N items left: ids -1, scores -inf."""
        self._check_fitted()
        single = np.isscalar(userid)
        ids = np.atleast_1d(np.asarray(userid, dtype=np.int64))
        n_users, n_items = self.user_factors.shape[0], self.item_factors.shape[0]
        if not recalculate_user and ids.size and (ids.min() < 0 or ids.max() >= n_users):
            raise ValueError(f"userid outside 0..{n_users - 1}")
        R = None
        if filter_already_liked_items or recalculate_user:
            R = self._ratings(user_items, self.item_factors.dtype)
            if R.shape[0] != ids.size:
                raise ValueError(f"user_items has {R.shape[0]} rows for {ids.size} users (pass user_items[userid])")
            if R.shape[1] != n_items:
                raise ValueError(f"user_items has {R.shape[1]} items, the model {n_items}")
        if recalculate_user:
            X = self.recalculate_user(ids, R)
        else:
            X = np.ascontiguousarray(self.user_factors[ids])
        seen = csr_parts(R)[:3] if filter_already_liked_items else (None, None, None)
        items, scores, count = _core.als_recommend(
            X, self.item_factors, list(range(ids.size)), int(N), *seen, check_device(self.device)
        )
        items, scores = _pad(items, scores, count)
        return (items[0], scores[0]) if single else (items, scores)

    def similar_items(self, itemid, N=10):
        """The N items most similar to itemid by cosine of the item factors
        (the item itself left out; implicit lists it first): (ids, scores)."""
        return self._similar(self.item_factors, itemid, N)

    def similar_users(self, userid, N=10):
        """The N users most similar to userid (the user itself left out)."""
        return self._similar(self.user_factors, userid, N)

    def _similar(self, F, rows, N):
        self._check_fitted()
        single = np.isscalar(rows)
        ids = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        items, scores, count = _core.als_similar(F, [int(i) for i in ids], int(N), check_device(self.device))
        items, scores = _pad(items, scores, count)
        return (items[0], scores[0]) if single else (items, scores)

    def save(self, path):
        """Writes the fitted model as the HDF5 checkpoint `kfactor als --checkpoint` writes."""
        self._check_fitted()
        _core.als_save(
            str(path), self._options_fitted, self.user_factors, self.item_factors, self._state["iteration"],
            self._state["seed"], self._state["history"], self._fingerprint,
        )

    @classmethod
    def load(cls, path, **params):
        """A fitted ALS from a checkpoint of save() or `kfactor als --checkpoint`."""
        out = _core.als_load(str(path))
        o = out["options"]
        implicit = o.get("implicit", "false") == "true"
        est = cls(
            factors=int(o["rank"]),
            regularization=float(o["lambda"]),
            implicit=implicit,
            weighting=o.get("weighting", "nnz"),
            random_state=int(o["seed"]),
            dtype=np.float32 if out["precision"] == "float" else np.float64,
        )
        if implicit:
            est.set_params(alpha=float(o["alpha"]), confidence=o["confidence"], solver=o["solver"])
            if "epsilon" in o:
                est.set_params(epsilon=float(o["epsilon"]))
            if "cg_steps" in o:
                est.set_params(cg_steps=int(o["cg_steps"]))
        est.set_params(**params)
        est.user_factors, est.item_factors = out["X"], out["Y"]
        est.n_iter_ = int(out["iteration"])
        est._state = {"iteration": out["iteration"], "seed": out["seed"], "history": out["history"]}
        est._options_fitted = est._options(out["seed"], out["iteration"])
        est._fingerprint = out["fingerprint"]
        est.history_ = out["history"]
        return est


def _pad(items, scores, count):
    """Ranked lists as (ids, scores) with -1 / -inf past each list's count."""
    items = items.astype(np.int64)
    scores = scores.copy()
    for b, c in enumerate(count):
        items[b, c:] = -1
        scores[b, c:] = -np.inf
    return items, scores
