# cmake -P script: install kfactor into a scratch prefix, configure and build
# examples/ against it, run every example on examples/data and check that its
# output shows a real result (a converged error, scores, GFLOP/s, a restart).
set(what "the examples")
include(${CMAKE_CURRENT_LIST_DIR}/build_against_install.cmake)
set(data ${SOURCE_DIR}/data)

# run(NAME REGEX COMMAND...): the command must succeed and print REGEX.
function(run name regex)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${name}:\n${out}")
  if(rc OR NOT out MATCHES "${regex}")
    message(FATAL_ERROR "${name} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

set(bin ${WORK_DIR}/build)
string(REPLACE "|" ";" MPIEXEC "${MPIEXEC}")
# A rank-3 matrix with 1% noise: rank 3 must fit it to about the noise.
run(nmf_matrix_market "relative_error=0\\.0[0-4]" ${bin}/nmf_matrix_market ${data}/planted_40x30.mtx 3)
run(als_score_pairs "test_rmse=[0-9.]+.*score [0-9]" ${bin}/als_score_pairs ${data}/ratings.tsv ${data}/pairs.tsv)
run(sddmm_plan_loop "20 applies .* GFLOP/s" ${bin}/sddmm_plan_loop)
if(MPIEXEC)
  run(mpi_checkpoint_restart "restarted at 20, iteration 40" ${MPIEXEC} ${bin}/mpi_checkpoint_restart
      ${data}/planted_40x30.mtx 3 ${WORK_DIR}/run.h5)
endif()
