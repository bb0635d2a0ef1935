"""scikit-learn's estimator checks, every one of them, for each estimator
with scikit-learn's interface."""

import pytest

pytest.importorskip("sklearn")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import kfactor  # noqa: E402


@parametrize_with_checks(
    [
        kfactor.NMF(max_iter=300, tol=1e-7, init="random"),
        kfactor.BooleanMF(2, max_iter=20),
        kfactor.ManifoldNMF(2, max_iter=20),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
