"""What every kfactor estimator shares: scikit-learn's base classes (or a
small stand-in when scikit-learn is not installed), input validation that
keeps a suitable array in place, and progress reporting through the
library's observer."""

import inspect
import sys

import numpy as np

try:
    import scipy.sparse as _sp
except ImportError:  # scipy is optional: dense input only
    _sp = None

try:
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        from sklearn.utils.validation import validate_data as _validate_data

        _FINITE = "ensure_all_finite"
    except ImportError:  # scikit-learn before 1.6
        def _validate_data(estimator, X, reset=True, **kwargs):
            return estimator._validate_data(X, reset=reset, **kwargs)

        _FINITE = "force_all_finite"

    HAVE_SKLEARN = True
except ImportError:
    HAVE_SKLEARN = False
    _FINITE = "ensure_all_finite"

    class NotFittedError(ValueError, AttributeError):
        """Raised by a method that needs a fitted estimator."""

    class BaseEstimator:
        """get_params/set_params from the constructor's keyword arguments,
        as scikit-learn's BaseEstimator."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r} for estimator {type(self).__name__}")
                setattr(self, key, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class TransformerMixin:
        """fit_transform as fit then transform."""

        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)

    def check_is_fitted(estimator, attributes=None):
        if not any(k.endswith("_") and not k.startswith("__") for k in vars(estimator)):
            raise NotFittedError(f"This {type(estimator).__name__} instance is not fitted yet; call 'fit' first.")

    def _validate_data(estimator, X, reset=True, accept_sparse=False, dtype=None, order=None, **_):
        X = _basic_check_array(X, accept_sparse, dtype, order)
        if reset:
            estimator.n_features_in_ = X.shape[1]
        elif X.shape[1] != estimator.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                f"{estimator.n_features_in_} features as input"
            )
        return X


FLOAT_DTYPES = (np.float64, np.float32)


class NonNegativeInput:
    """scikit-learn's tags for an estimator of non-negative X, dense or
    sparse: its estimator checks then give it such input only."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    def _more_tags(self):  # scikit-learn before 1.6
        return {"requires_positive_X": True}


def _basic_check_array(X, accept_sparse, dtype, order):
    """Without scikit-learn: a 2-D finite float array (or CSR)."""
    if _sp is not None and _sp.issparse(X):
        if not accept_sparse:
            raise TypeError("a sparse matrix was given; this method takes a dense array")
        return X
    X = np.asarray(X)
    if X.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got an array of {X.ndim} dimension(s)")
    if isinstance(dtype, (tuple, list)):
        dtype = X.dtype if X.dtype in dtype else dtype[0]
    return np.asarray(X, dtype=dtype, order=order)


def on_cuda(X):
    """True for a DLPack array (cupy, torch) in CUDA memory."""
    if isinstance(X, np.ndarray) or not hasattr(X, "__dlpack_device__"):
        return False
    return X.__dlpack_device__()[0] in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def array_library(X):
    """'cupy' or 'torch' for a CUDA array of those libraries (TypeError for
    another library's)."""
    lib = lib_of(X)
    if lib not in ("cupy", "torch"):
        raise TypeError(f"CUDA arrays of {lib} are not supported: pass cupy or torch arrays")
    return lib


def like(X, values):
    """A result of the extension as an array of X's kind: a DLPack result
    of a CUDA run as an array of X's library (cupy, torch); numpy as is."""
    if not on_cuda(X):
        return values
    if array_library(X) == "cupy":
        import cupy

        return cupy.from_dlpack(values)
    import torch

    return torch.from_dlpack(values)


def contiguous(a, dtype=None):
    """`a` as a C-contiguous array of `dtype` in its own library and memory
    (numpy, cupy, torch): `a` itself when it already is one."""
    if not on_cuda(a):
        return np.ascontiguousarray(a, dtype=dtype)
    if array_library(a) == "cupy":
        import cupy

        return cupy.ascontiguousarray(a, dtype=dtype)
    import torch

    if dtype is not None:
        a = a.to({np.float32: torch.float32, np.float64: torch.float64}[np.dtype(dtype).type])
    return a.contiguous()


def numpy_dtype(a):
    """The numpy scalar type of a numpy, cupy or torch array."""
    dt = a.dtype
    if lib_of(a) == "torch":
        import torch

        return {torch.float32: np.float32, torch.float64: np.float64}.get(dt, np.float64)
    return np.dtype(dt).type


def lib_of(a):
    return type(a).__module__.split(".")[0]


def to_host(a):
    """A numpy copy of a CUDA array (numpy arrays as they are)."""
    if not on_cuda(a):
        return a
    if array_library(a) == "cupy":
        return a.get()
    return a.detach().cpu().numpy()


def _check_cuda_array(estimator, X, reset, dtype, non_negative, what):
    """check_X for a CUDA array, on the device: 2-D, real, finite, of a
    float dtype (others converted once, as on the host)."""
    name = type(estimator).__name__
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got an array of {X.ndim} dimension(s)")
    lib = array_library(X)
    if lib == "cupy":
        import cupy as xp

        kind = X.dtype.kind
        current = np.dtype(X.dtype).type
    else:
        import torch as xp

        kind = "c" if X.is_complex() else ("f" if X.is_floating_point() else "i")
        current = numpy_dtype(X) if X.dtype in (xp.float32, xp.float64) else None
    if kind == "c":
        raise ValueError("Complex data not supported")
    if dtype is None:
        dtype = current if current in FLOAT_DTYPES else np.float64
    X = contiguous(X, np.dtype(dtype).type)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"Found array with {X.shape[0]} sample(s) and {X.shape[1]} feature(s) (shape={tuple(X.shape)})"
                         f" while a minimum of 1 is required by {name}.")
    if not bool(xp.isfinite(X).all()):
        raise ValueError(f"Input {what} contains NaN or infinity.")
    if non_negative and bool((X < 0).any()):
        raise ValueError(f"Negative values in data passed to {name} ({what} must be non-negative)")
    if reset:
        estimator.n_features_in_ = X.shape[1]
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {name} is expecting {estimator.n_features_in_} features"
                         " as input")
    return X


def is_sparse(X):
    return _sp is not None and _sp.issparse(X)


def resolve_dtype(dtype, X):
    """The estimator's dtype parameter: None follows X (float32 stays
    float32, everything else becomes float64)."""
    if dtype is None:
        if on_cuda(X):
            return np.float32 if numpy_dtype(X) == np.float32 else np.float64
        return np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dt}")
    return dt.type


def check_X(estimator, X, *, reset, dtype=None, accept_sparse=True, non_negative=False, what="X", host_only=False,
            values_in_extension=False):
    """X validated as scikit-learn does (2-D, finite, numeric; float32 and
    float64 kept, C order) without copying an array that already fits;
    sparse input as canonical CSR. A CUDA array (cupy, torch) stays where it
    is: the same checks run on the device, and it is converted only where it
    must be; `host_only` estimators (their solvers read X on the host)
    refuse one. `values_in_extension`: a dense host X's finiteness and sign
    are left to the extension, which checks them in the pass over the values
    it makes anyway (numpy's two passes cost 0.2 s on a 20000 x 10000 X);
    when the extension raises, the caller runs check_X again without it, so
    that bad values get scikit-learn's error."""
    if on_cuda(X):
        if host_only:
            raise ValueError(f"{type(estimator).__name__} reads {what} on the host: pass a numpy array or a "
                             "scipy.sparse matrix (device='cuda' still runs the solver on the GPU)")
        return _check_cuda_array(estimator, X, reset, dtype, non_negative, what)
    want = FLOAT_DTYPES if dtype is None else np.dtype(dtype).type
    deferred = values_in_extension and not (_sp is not None and _sp.issparse(X))
    X = _validate_data(
        estimator, X, reset=reset, accept_sparse=("csr", "csc", "coo") if accept_sparse else False,
        dtype=want, order="C", ensure_min_samples=1, ensure_min_features=1, **{_FINITE: not deferred},
    )
    if is_sparse(X):
        X = canonical_csr(X, dtype=X.dtype)
        values = X.data
    else:
        values = X
    if non_negative and not deferred and values.size and values.min() < 0:
        raise ValueError(f"Negative values in data passed to {type(estimator).__name__} ({what} must be non-negative)")
    return X


def canonical_csr(X, dtype=None):
    """CSR with sorted column indices, no duplicates, int64 row pointers and
    int32 column indices: the layout the extension reads in place."""
    if _sp is None:
        raise TypeError("sparse input needs scipy")
    if not _sp.issparse(X):
        X = _sp.csr_matrix(np.asarray(X))
    X = X.tocsr()
    if dtype is not None and X.dtype != dtype:
        X = X.astype(dtype)
    elif X.dtype not in FLOAT_DTYPES:
        X = X.astype(np.float64)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if X.shape[1] >= 2**31 or X.nnz >= 2**63:
        raise ValueError(f"a sparse matrix of {X.shape[1]} columns: kfactor takes fewer than 2^31")
    return X


def csr_parts(X):
    """(indptr int64, indices int32, data, n_cols) of a canonical CSR."""
    indptr = X.indptr if X.indptr.dtype == np.int64 else X.indptr.astype(np.int64)
    indices = X.indices if X.indices.dtype == np.int32 else X.indices.astype(np.int32)
    return np.ascontiguousarray(indptr), np.ascontiguousarray(indices), np.ascontiguousarray(X.data), X.shape[1]


def seed_of(random_state):
    """A 64-bit seed from scikit-learn's random_state (None: a fresh one)."""
    if random_state is None:
        return int(np.random.randint(0, 2**31 - 1))
    if isinstance(random_state, (int, np.integer)):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    raise ValueError(f"random_state must be None, an int, a RandomState or a Generator, got {random_state!r}")


def progress(verbose, callback, name):
    """The observer the solver calls after every iteration: prints a line
    when verbose (every `verbose` iterations for an int above 1), then calls
    callback(iteration, metrics) and stops the run when it returns True."""
    if not verbose and callback is None:
        return None
    every = int(verbose) if verbose and int(verbose) > 1 else 1

    def observe(iteration, seconds, metrics):
        if verbose and iteration % every == 0:
            shown = " ".join(f"{k}={v:.6g}" for k, v in metrics.items())
            print(f"{name}: iteration {iteration} ({seconds:.3f} s) {shown}", file=sys.stdout, flush=True)
        if callback is not None:
            return bool(callback(iteration, metrics))
        return False

    return observe


def check_device(device):
    from . import _core

    _core.check_device(str(device))
    return str(device)
