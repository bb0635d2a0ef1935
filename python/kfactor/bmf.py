"""kfactor.BooleanMF: Boolean matrix factorization C ~ A o B (OR of ANDs)
by CuBin's parallel randomized local search."""

import numpy as np

from . import _core
from ._base import (
    BaseEstimator,
    NonNegativeInput,
    check_device,
    check_is_fitted,
    check_X,
    is_sparse,
    progress,
    seed_of,
)


class BooleanMF(NonNegativeInput, BaseEstimator):
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
    warm_start : fit continues the fitted search (the same X) for max_iter
        more iterations, exactly as an uninterrupted fit would have.

    There is no transform of new samples (the search fits A and B
    together): fit_transform returns A for the training samples.

    Fitted: components_ (uint8), A_ (uint8), n_iter_, relative_error_
    (wrong entries / all entries), reconstruction_err_ (wrong entries),
    history_.

    save(path) writes the fitted search as the HDF5 checkpoint `kfactor bmf
    --checkpoint` writes; BooleanMF.load(path) reads one back, and with
    warm_start=True its fit continues the search bit for bit.
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
        warm_start=False,
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
        self.warm_start = warm_start

    def fit(self, X, y=None):
        """Fits A and B to the ones of X."""
        self.fit_transform(X)
        return self

    def fit_transform(self, X, y=None):
        """Fits A and B and returns A (n_samples x n_components, uint8)."""
        device = check_device(self.device)
        continuing = self.warm_start and hasattr(self, "_fit_state")
        X = check_X(self, X, reset=not continuing, non_negative=True, host_only=True)
        m, n = X.shape
        if continuing:
            if (m, n) != self._shape:
                raise ValueError(f"warm_start: X is {m} x {n}, the fitted model's {self._shape[0]} x {self._shape[1]}")
            k, seed, state = self.n_components_, self._seed, self._fit_state
            max_iter = self.n_iter_ + int(self.max_iter)
        else:
            k = self.n_components if self.n_components is not None else min(m, n)
            seed, state, max_iter = seed_of(self.random_state), None, int(self.max_iter)
        if is_sparse(X):
            coo = X.tocoo()
            keep = coo.data != 0
            rows, cols = coo.row[keep], coo.col[keep]
        else:
            rows, cols = np.nonzero(X)
        options = {
            "rank": int(k),
            "max_iter": max_iter,
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
            "seed": seed,
        }
        out = _core.bmf_fit(
            m, n, np.ascontiguousarray(rows, dtype=np.int32), np.ascontiguousarray(cols, dtype=np.int32), options,
            state, progress(self.verbose, self.callback, "BooleanMF"), device,
        )
        metrics = out["report"]["metrics"]
        self.A_ = out["A"]
        self.components_ = out["B"]
        self.n_components_ = int(k)
        self.n_iter_ = int(out["iteration"])
        self.relative_error_ = float(metrics["relative_error"])
        self.reconstruction_err_ = float(metrics["errors"])
        self.history_ = out["history"]
        self._fit_state = {"fields": out["fields"], "history": out["history"]}
        self._checkpoint = {"options": out["options"], "fingerprint": out["fingerprint"]}
        self._seed = seed
        self._shape = (m, n)
        return self.A_

    def save(self, path):
        """Writes the fitted search as the HDF5 checkpoint `kfactor bmf
        --checkpoint` writes (also a restart file for the command)."""
        check_is_fitted(self)
        _core.checkpoint_save(
            str(path), "bmf", "bits", self.n_components_, self._checkpoint["options"],
            self._checkpoint["fingerprint"], self._fit_state["fields"], self._fit_state["history"],
        )

    @classmethod
    def load(cls, path, **params):
        """A fitted BooleanMF from a checkpoint written by save() or by
        `kfactor bmf --checkpoint`; `params` set estimator parameters beyond
        the stored ones (the file holds what decides the iterates, not the
        stop rule: pass max_iter, tol, target, every_line_changed with
        warm_start=True to continue)."""
        out = _core.checkpoint_load(str(path), "bmf")
        o, fields = out["options"], out["fields"]
        rank = int(out["rank"])
        est = cls(
            n_components=rank,
            init=o["init"],
            batch=int(o["batch"]),
            flip_prob=float(o["flip_prob"]),
            temperature=float(o["temperature"]),
            temp_step=int(o["temp_step"]),
            temp_factor=float(o["temp_factor"]),
            weight_ones=float(o["weight_ones"]),
            random_state=int(o["seed"]),
        )
        est.set_params(**params)
        m, n = int(fields["A"].shape[0]), int(fields["Bt"].shape[0])
        # The result is the best factors seen when the search keeps a copy
        # of them (bmf::factor_a / factor_b), else the current ones.
        best = "best_A" in fields
        est.A_ = _unpack_bits(fields["best_A" if best else "A"], rank)
        est.components_ = np.ascontiguousarray(_unpack_bits(fields["best_Bt" if best else "Bt"], rank).T)
        est.n_components_ = rank
        est.n_features_in_ = n
        est.n_iter_ = int(fields["iteration"])
        wrong = int(fields["best_false_pos" if best else "false_pos"]) + int(fields["best_false_neg" if best else "false_neg"])
        est.reconstruction_err_ = float(wrong)
        est.relative_error_ = wrong / float(m * n)
        est.history_ = out["history"]
        est._fit_state = {"fields": fields, "history": out["history"]}
        est._checkpoint = {"options": o, "fingerprint": out["fingerprint"]}
        est._seed = int(o["seed"])
        est._shape = (m, n)
        return est

    def inverse_transform(self, A):
        """A o B as a 0/1 uint8 array (n_samples x n_features)."""
        check_is_fitted(self)
        A = np.asarray(A, dtype=np.uint8)
        return (A.astype(np.int32) @ self.components_.astype(np.int32) > 0).astype(np.uint8)


def _unpack_bits(words, bits):
    """A BitMatrix's words (lines x 64-bit words, bit l of a line in word
    l // 64 at position l % 64) as a lines x bits 0/1 uint8 array."""
    words = np.ascontiguousarray(words, dtype="<u8")
    return np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")[:, :bits].copy()
