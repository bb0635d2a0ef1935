"""The extension module itself: build facts, devices, the error mapping."""

import os
import subprocess
import sys

import numpy as np
import pytest

import kfactor
from kfactor import _core


def test_build_info_names_the_build():
    info = kfactor.build_info()
    assert info["version"] == kfactor.__version__
    assert info["threads"] >= 1
    assert info["execution_spaces"]


def test_cuda_on_a_cpu_build_names_the_build():
    if kfactor.build_info()["cuda"]:
        pytest.skip("a CUDA build")
    with pytest.raises(ValueError, match="no CUDA.*" + kfactor.build_info()["kokkos_version"]):
        kfactor.NMF(2, device="cuda").fit(np.ones((4, 3)))
    with pytest.raises(ValueError, match="no CUDA"):
        _core.check_device("cuda:1")


def test_unknown_device_is_refused():
    with pytest.raises(ValueError, match="'cpu', 'cuda' or 'cuda:N'"):
        kfactor.NMF(2, device="tpu").fit(np.ones((4, 3)))


@pytest.mark.parametrize(
    "kind, exception, text",
    [
        ("usage", ValueError, "bad option"),
        ("input", ValueError, "input.mtx:7: bad option"),
        ("runtime", RuntimeError, "bad option"),
        ("oom", MemoryError, "bad option"),
        ("alloc", MemoryError, None),
    ],
)
def test_errors_map_to_python_exceptions(kind, exception, text):
    with pytest.raises(exception, match=text):
        _core._raise(kind, "bad option")


def test_runtime_failures_are_told_from_memory_errors_by_type():
    # The type decides, not the wording: a RuntimeFailure that speaks of
    # allocation is still a RuntimeError.
    with pytest.raises(RuntimeError, match="cannot allocate") as info:
        _core._raise("runtime", "nmf: cannot allocate W (1 x 2)")
    assert not isinstance(info.value, MemoryError)


def test_strict_core_refuses_wrong_dtype_and_layout():
    X = np.ones((6, 5))
    with pytest.raises(TypeError):
        _core.nmf_fit_dense(X.astype(np.int64), {"rank": 2})
    with pytest.raises(TypeError):
        _core.nmf_fit_dense(X[:, ::2], {"rank": 2})
    with pytest.raises(TypeError):
        _core.nmf_fit_dense(np.ones((2, 3, 4)), {"rank": 2})


def test_library_input_errors_are_value_errors():
    X = np.ones((6, 5))
    X[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN|finite"):
        _core.nmf_fit_dense(X, {"rank": 2})
    X[2, 3] = -1.0
    with pytest.raises(ValueError, match="negative"):
        _core.nmf_fit_dense(X, {"rank": 2})


def test_kokkos_uses_omp_num_threads_and_finalizes_at_exit():
    code = (
        "import numpy as np, kfactor\n"
        "print(kfactor.build_info()['threads'])\n"
        "kfactor.NMF(2, max_iter=3).fit(np.ones((5, 4)) + np.eye(5, 4))\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1"]
    assert "Kokkos" not in run.stderr  # no allocation left alive at finalize, no warning


def test_a_factor_beyond_memory_is_a_memory_error():
    # In a child whose address space is capped 1 GiB above its size after
    # import: a 64 x 2^24 input with 64 entries (~130 MiB with its
    # transpose) fits, its rank-64 factor H (8 GiB) does not, and the
    # library's OutOfMemory arrives as MemoryError naming the allocation.
    code = (
        "import resource, numpy as np, scipy.sparse as sp, kfactor\n"
        "size = int(next(l for l in open('/proc/self/status') if l.startswith('VmSize:')).split()[1]) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (size + 2**30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "X = sp.csr_matrix((np.arange(1.0, 65.0), (np.arange(64), np.arange(64))), shape=(64, 2**24))\n"
        "try:\n"
        "    kfactor.NMF(64, init='random', random_state=0, max_iter=1).fit(X)\n"
        "except MemoryError as e:\n"
        "    print('MemoryError:', e)\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("MemoryError: nmf: cannot allocate"), run.stdout + run.stderr


def test_the_module_exports_its_init_function_only():
    # The module links kfactor, Kokkos and (on CUDA builds) runtime pieces
    # statically; an exported copy of a C++ runtime symbol is bound by
    # libraries loaded later (pyarrow's static constructors did) or clashes
    # with one loaded earlier (numpy first made Kokkos::initialize crash).
    import ctypes

    module = ctypes.CDLL(_core.__file__)
    assert hasattr(module, "PyInit__core")
    # kfactor's own functions, linked statically in every build (dlsym on the
    # handle also searches the module's shared dependencies, Kokkos among them
    # where it is a shared library, so those names prove nothing).
    for name in ("_ZN7kfactor10build_infoEv", "_ZN7kfactor10tile_countEll"):
        assert not hasattr(module, name), name
