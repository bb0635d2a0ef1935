# cmake -P script: install, configure the consumer against the install, build, run.
set(what "the consumer")
include(${CMAKE_CURRENT_LIST_DIR}/build_against_install.cmake)
execute_process(COMMAND ${WORK_DIR}/build/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "consumer says: ${out}")
if(rc OR NOT out MATCHES "relative_error=0\\.")
  message(FATAL_ERROR "the consumer failed (${rc}): ${out}")
endif()
