# Run by the ctest test python_pip_install (cmake -P): installs the package
# with pip through scikit-build-core from SOURCE_DIR into WORK_DIR/site,
# then imports the installed package from outside both trees and fits an
# NMF with it.
#
# The CMake build goes to BUILD_DIR, kept between runs (a rerun compiles
# only what changed). Where ccache is installed it compiles through it with
# the compiler CXX and the cache directory and base directory the test's own
# build was configured with (CCACHE_DIR_MAIN, CCACHE_BASEDIR_MAIN: tools/build
# sets both): with BUILD_DIR beside that build (build-pip beside build),
# every compile command equals the main build's, and a fresh BUILD_DIR takes
# the library's objects from the cache.
file(REMOVE_RECURSE ${WORK_DIR}/site ${WORK_DIR}/run)
file(MAKE_DIRECTORY ${WORK_DIR}/run)
find_program(CCACHE ccache)
set(build_env "")
if(CCACHE)
  set(build_env CMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
  if(CCACHE_DIR_MAIN)
    list(APPEND build_env CCACHE_DIR=${CCACHE_DIR_MAIN})
  endif()
  if(CCACHE_BASEDIR_MAIN)
    list(APPEND build_env CCACHE_BASEDIR=${CCACHE_BASEDIR_MAIN})
  endif()
endif()
# The dependencies where this build found them (a Kokkos outside the
# system's prefixes, as a CUDA build's usually is), through the environment:
# a list of several prefixes would split into several pip arguments.
if(PREFIX_PATH)
  string(REPLACE ";" ":" prefix_env "${PREFIX_PATH}")
  list(APPEND build_env "CMAKE_PREFIX_PATH=${prefix_env}")
endif()
string(TIMESTAMP t0 "%s")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${build_env} CMAKE_BUILD_PARALLEL_LEVEL=${JOBS}
    ${PYTHON} -m pip install --no-build-isolation --no-deps --break-system-packages --no-cache-dir --quiet
    --target ${WORK_DIR}/site --config-settings=build-dir=${BUILD_DIR}
    --config-settings=cmake.define.CMAKE_CXX_COMPILER=${CXX} ${SOURCE_DIR}
  RESULT_VARIABLE rc)
string(TIMESTAMP t1 "%s")
math(EXPR seconds "${t1} - ${t0}")
message(STATUS "pip install took ${seconds} s")
if(rc)
  message(FATAL_ERROR "pip install failed: ${rc}")
endif()
# From an empty directory with only the installed package on the path: the
# package must not come from the source tree or the build tree.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${WORK_DIR}/site PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=2
    ${PYTHON} -c [=[
import os, sys
import numpy as np
import kfactor
site = os.path.realpath(sys.argv[1])
assert os.path.realpath(kfactor.__file__).startswith(site + os.sep), kfactor.__file__
assert os.path.realpath(kfactor._core.__file__).startswith(site + os.sep), kfactor._core.__file__
rng = np.random.default_rng(7)
X = rng.random((40, 3)) @ rng.random((3, 30))
model = kfactor.NMF(3, init="random", random_state=1, max_iter=300, tol=0)
W = model.fit_transform(X)
err = np.linalg.norm(X - W @ model.components_) / np.linalg.norm(X)
assert W.shape == (40, 3) and model.components_.shape == (3, 30), (W.shape, model.components_.shape)
assert (W >= 0).all() and (model.components_ >= 0).all()
assert err < 1e-2, err
assert abs(err - model.relative_error_) < 1e-6, (err, model.relative_error_)
print("installed kfactor", kfactor.__version__, "relative error", err)
]=] ${WORK_DIR}/site
  WORKING_DIRECTORY ${WORK_DIR}/run
  RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the installed package failed: ${rc}")
endif()
