"""scikit-learn's estimator checks, every one of them, for each estimator
with scikit-learn's interface, on each device."""

import pytest

pytest.importorskip("sklearn")
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import kfactor  # noqa: E402
from conftest import DEVICES  # noqa: E402


@parametrize_with_checks(
    [
        estimator
        for device in DEVICES
        for estimator in (
            kfactor.NMF(max_iter=300, tol=1e-7, init="random", device=device),
            kfactor.BooleanMF(2, max_iter=20, device=device),
            kfactor.ManifoldNMF(2, max_iter=20, device=device),
        )
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
