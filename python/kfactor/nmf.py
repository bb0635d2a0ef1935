"""kfactor.NMF: non-negative matrix factorization X ~ W H with
scikit-learn's interface, on kfactor's HALS, ALO-NMF and multiplicative
update solvers."""

import numpy as np

from . import _core
from ._base import (
    BaseEstimator,
    NonNegativeInput,
    TransformerMixin,
    check_device,
    check_is_fitted,
    check_X,
    contiguous,
    csr_parts,
    is_sparse,
    like,
    numpy_dtype,
    on_cuda,
    progress,
    resolve_dtype,
    seed_of,
    to_host,
)

_BETA_LOSS = {
    "frobenius": "frobenius", 2: "frobenius", 2.0: "frobenius",
    "kullback-leibler": "kl", "kl": "kl", 1: "kl", 1.0: "kl",
    "itakura-saito": "is", "is": "is", 0: "is", 0.0: "is",
}
_BETA_NAME = {"frobenius": "frobenius", "kl": "kullback-leibler", "is": "itakura-saito"}


class NMF(NonNegativeInput, TransformerMixin, BaseEstimator):
    """Non-negative matrix factorization X (n_samples x n_features) ~ W H,
    W = transform(X) (n_samples x n_components), H = components_.

    Parameters follow scikit-learn's NMF where it has them (see
    docs/python/nmf.md for each one and the mapping table):

    n_components : int or None. None: min(n_samples, n_features).
    algorithm : "hals" | "alo" | "mu". hals and alo (ALO-NMF, the same
        iterates as hals at GEMM speed) are coordinate descent, sklearn's
        "cd"; mu is sklearn's "mu" (needed for kullback-leibler and
        itakura-saito).
    init : None | "random" | "nndsvd" | "nndsvda" | "nndsvdar" | "custom".
        None: "nndsvda" (scikit-learn's default). "custom": W= and H= in fit.
    beta_loss : "frobenius" | "kullback-leibler" | "itakura-saito" (or 2, 1, 0).
    tol : stop when the relative error changes by at most tol relative to
        the previous epoch (0: run max_iter epochs).
    max_iter : epochs (with warm_start: further epochs).
    random_state : seed of the random start (None: a fresh seed).
    alpha_W, alpha_H, l1_ratio : scikit-learn's penalties (alpha_H="same":
        alpha_W).
    missing : "zero" | "absent": unstored entries of a sparse X are zeros
        (scikit-learn) or unobserved (loss over stored entries only).
    dtype : None (follow X: float32 stays float32, else float64), float32 or float64.
    device : "cpu", "cuda" or "cuda:N" (a CUDA build of kfactor).
    verbose : print a line per epoch (an int above 1: every verbose epochs).
    callback : callable(iteration, metrics) called after every epoch; a
        true return value stops the fit.
    warm_start : fit continues from the fitted W and H for max_iter more
        epochs, exactly as an uninterrupted fit would have.
    tile, epsilon : ALO tile size and floor of the factors (0: defaults).
    comm : an mpi4py communicator (a kfactor built with MPI): fit runs the
        distributed solver of `kfactor nmf --distributed` on its ranks, each
        passing the same dense X; every rank gets the full factors. The
        result equals the single-process one up to summation order (see
        docs/python/README.md#mpi). None: a single-process fit.

    Fitted attributes: components_, n_components_, n_iter_,
    reconstruction_err_ (||X - WH||_F for frobenius, else
    sqrt(2 * divergence)), relative_error_, history_ (metrics per epoch),
    n_features_in_.
    """

    def __init__(
        self,
        n_components=None,
        *,
        algorithm="hals",
        init=None,
        beta_loss="frobenius",
        tol=1e-4,
        max_iter=200,
        random_state=None,
        alpha_W=0.0,
        alpha_H="same",
        l1_ratio=0.0,
        missing="zero",
        dtype=None,
        device="cpu",
        verbose=0,
        callback=None,
        warm_start=False,
        tile=0,
        epsilon=0.0,
        comm=None,
    ):
        self.n_components = n_components
        self.algorithm = algorithm
        self.init = init
        self.beta_loss = beta_loss
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state
        self.alpha_W = alpha_W
        self.alpha_H = alpha_H
        self.l1_ratio = l1_ratio
        self.missing = missing
        self.dtype = dtype
        self.device = device
        self.verbose = verbose
        self.callback = callback
        self.warm_start = warm_start
        self.tile = tile
        self.epsilon = epsilon
        self.comm = comm

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _more_tags(self):  # scikit-learn before 1.6
        return {"preserves_dtype": [np.float64, np.float32]}

    def _options(self, n_components, seed, max_iter):
        if self.beta_loss not in _BETA_LOSS:
            raise ValueError(
                f"beta_loss must be 'frobenius', 'kullback-leibler' or 'itakura-saito' (or 2, 1, 0), "
                f"got {self.beta_loss!r}"
            )
        if not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
            raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
        alpha_H = self.alpha_W if isinstance(self.alpha_H, str) and self.alpha_H == "same" else self.alpha_H
        return {
            "algorithm": str(self.algorithm),
            "rank": int(n_components),
            "tile": int(self.tile),
            "epsilon": float(self.epsilon),
            "seed": int(seed),
            "max_iter": int(max_iter),
            "tol": float(self.tol),
            "init": "nndsvda" if self.init is None else str(self.init),
            "alpha_w": float(self.alpha_W),
            "alpha_h": float(alpha_H),
            "l1_ratio": float(self.l1_ratio),
            "beta_loss": _BETA_LOSS[self.beta_loss],
            "missing": str(self.missing),
        }

    def fit(self, X, y=None, W=None, H=None):
        """Fits the model to X; W and H are the start for init='custom'."""
        self._fit(X, W, H)
        return self

    def fit_transform(self, X, y=None, W=None, H=None):
        """Fits the model to X and returns W (n_samples x n_components)."""
        return self._fit(X, W, H)

    def _fit(self, X, W, H):
        device = check_device(self.device)
        continuing = self.warm_start and hasattr(self, "components_")
        dtype = resolve_dtype(self.dtype, X)
        X = check_X(self, X, reset=not continuing, dtype=dtype, non_negative=True, values_in_extension=True)
        try:
            return self._fit_checked(X, W, H, device, continuing, dtype)
        except ValueError:
            check_X(self, X, reset=False, dtype=dtype, non_negative=True)
            raise

    def _fit_checked(self, X, W, H, device, continuing, dtype):
        n_samples, n_features = X.shape
        if continuing:
            n_components, state = self.n_components_, self._state
            seed = state["seed"]
            W, Ht = self._W, self.components_.T
            if W.shape[0] != n_samples:
                raise ValueError(f"warm_start: X has {n_samples} samples, the fitted model {W.shape[0]}")
            max_iter = state["iteration"] + self.max_iter
        else:
            n_components = self.n_components if self.n_components is not None else min(n_samples, n_features)
            if not isinstance(n_components, (int, np.integer)) or n_components < 1:
                raise ValueError(f"n_components must be a positive integer or None, got {n_components!r}")
            state, seed, max_iter = None, seed_of(self.random_state), self.max_iter
            Ht = None if H is None else (H.T if on_cuda(H) else np.asarray(H).T)
        options = self._options(n_components, seed, max_iter)
        # The start in X's memory (in place where it already fits).
        W = None if W is None else contiguous(W, dtype)
        Ht = None if Ht is None else contiguous(Ht, dtype)
        observe = progress(self.verbose, self.callback, "NMF")
        if self.comm is not None:
            if is_sparse(X) or on_cuda(X):
                raise ValueError("NMF with comm= takes a dense numpy X (every rank passes the whole matrix)")
            if state is not None or W is not None or Ht is not None:
                raise ValueError("NMF with comm= starts from init='random' or an NNDSVD (no warm_start, no custom init)")
            out = _core.nmf_fit_distributed(X, options, self.comm.py2f(), observe, device)
        elif is_sparse(X):
            out = _core.nmf_fit_csr(*csr_parts(X), options, W, Ht, state, observe, device)
        else:
            out = _core.nmf_fit_dense(X, options, W, Ht, state, observe, device)
        self._store(out, n_components, options, X)
        return self._W

    def _store(self, out, n_components, options, X):
        report = out["report"]
        self._W = like(X, out["W"])
        self.components_ = like(X, out["Ht"]).T
        self.n_components_ = int(n_components)
        self.n_iter_ = int(out["iteration"])
        self._state = {"iteration": out["iteration"], "seed": out["seed"], "history": out["history"]}
        self._options_fitted = options
        self._fingerprint = out["fingerprint"]
        self.history_ = out["history"]
        metrics = report["metrics"]
        self.relative_error_ = float(metrics.get("relative_error", np.nan))
        if options["beta_loss"] == "frobenius":
            # ||X||_F from the extension's own pass over X's values.
            self.reconstruction_err_ = self.relative_error_ * float(np.sqrt(out["norm2"]))
        else:
            self.reconstruction_err_ = float(np.sqrt(2.0 * metrics.get("divergence", np.nan)))

    def transform(self, X):
        """W for new samples with H = components_ fixed (max_iter epochs of
        the fitting algorithm's update of W alone)."""
        check_is_fitted(self)
        device = check_device(self.device)
        dtype = numpy_dtype(self.components_)
        X = check_X(self, X, reset=False, dtype=dtype, non_negative=True)
        options = dict(self._options_fitted)
        options.update(init="random", max_iter=int(self.max_iter), tol=float(self.tol))
        # X ~ W H is X^T ~ H^T W^T: the library's transform updates the
        # factor beside a fixed one, so the penalties trade places.
        options["alpha_w"], options["alpha_h"] = options["alpha_h"], options["alpha_w"]
        Ht = contiguous(self.components_.T)
        if is_sparse(X):
            out = _core.nmf_transform_csr(*csr_parts(X.T.tocsr()), options, Ht, device)
        else:
            out = _core.nmf_transform_dense(contiguous(X.T), options, Ht, device)
        return like(X, out["Ht"])

    def inverse_transform(self, X=None, *, Xt=None):
        """W H as a dense n_samples x n_features array."""
        if X is None:
            X = Xt
        check_is_fitted(self)
        H = self.components_
        W = contiguous(X, numpy_dtype(H))
        if W.ndim != 2 or W.shape[1] != self.n_components_:
            raise ValueError(f"inverse_transform takes W of shape (n_samples, {self.n_components_}), got {W.shape}")
        return like(W, _core.nmf_inverse_transform(W, contiguous(H.T), check_device(self.device)))

    def save(self, path):
        """Writes the fitted model as the HDF5 checkpoint `kfactor nmf
        --checkpoint` writes (also a restart file for the command)."""
        check_is_fitted(self)
        _core.nmf_save(
            str(path), self._options_fitted, np.ascontiguousarray(to_host(self._W)),
            np.ascontiguousarray(to_host(self.components_.T)),
            self._state["iteration"], self._state["seed"], self._state["history"], self._fingerprint,
        )

    @classmethod
    def load(cls, path, **params):
        """A fitted NMF from a checkpoint written by save() or by `kfactor
        nmf --checkpoint`; `params` set estimator parameters beyond the
        stored ones. The file holds what decides the iterates, not the
        stop rule: pass max_iter and tol (e.g. tol=0) with warm_start=True
        to continue."""
        out = _core.nmf_load(str(path))
        o = out["options"]
        beta = o.get("beta_loss", "frobenius")
        est = cls(
            n_components=int(o["rank"]),
            algorithm=o["algorithm"],
            init=o.get("init", "random"),
            beta_loss=_BETA_NAME.get(beta, beta),
            random_state=int(o["seed"]),
            alpha_W=float(o.get("alpha_w", 0.0)),
            alpha_H=float(o.get("alpha_h", 0.0)),
            l1_ratio=float(o.get("l1_ratio", 0.0)),
            missing=o.get("missing", "zero"),
            epsilon=float(o.get("epsilon", 0.0)),
            tile=int(o.get("tile", 0)) if o["algorithm"] == "alo" else 0,
        )
        est.set_params(**params)
        est._W = out["W"]
        est.components_ = out["Ht"].T
        est.n_components_ = int(o["rank"])
        est.n_features_in_ = est.components_.shape[1]
        est.n_iter_ = int(out["iteration"])
        est._state = {"iteration": out["iteration"], "seed": out["seed"], "history": out["history"]}
        est._options_fitted = est._options(est.n_components_, out["seed"], out["iteration"])
        est._fingerprint = out["fingerprint"]
        est.history_ = out["history"]
        names = list(out["history"]["names"])
        values = out["history"]["values"]
        est.relative_error_ = float(values[-1, names.index("relative_error")]) if len(values) else np.nan
        return est
