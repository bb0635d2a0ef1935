# bench_sddmm's cuSPARSE peer: on CUDA builds, link CUDA::cusparse and enable
# the direct cusparseSDDMM measurement. Include from perf/CMakeLists.txt after
# the bench targets are created:  include(${CMAKE_CURRENT_SOURCE_DIR}/bench_sddmm.cmake)
if(TARGET bench_sddmm AND Kokkos_ENABLE_CUDA)
  find_package(CUDAToolkit)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cusparse)
    target_link_libraries(bench_sddmm PRIVATE CUDA::cusparse)
    target_compile_definitions(bench_sddmm PRIVATE KFACTOR_BENCH_CUSPARSE=1)
  endif()
endif()
