# Helpers shared by kfactor's own build and by consumers of the installed package.

# A Kokkos built with Kokkos_ENABLE_COMPILE_AS_CMAKE_LANGUAGE (the CUDA build)
# needs every translation unit that instantiates Kokkos kernels compiled as
# CUDA. kfactor_setup_kokkos_language() enables that language once;
# kfactor_kokkos_sources(<files>) marks sources accordingly (a no-op for
# host-only Kokkos builds such as OpenMP).
macro(kfactor_setup_kokkos_language)
  set(KFACTOR_KOKKOS_LANGUAGE CXX)
  if(Kokkos_ENABLE_CUDA)
    kokkos_check(OPTIONS COMPILE_AS_CMAKE_LANGUAGE RETURN_VALUE _kf_as_lang)
    if(_kf_as_lang)
      enable_language(CUDA)
      set(KFACTOR_KOKKOS_LANGUAGE CUDA)
      if(NOT DEFINED CMAKE_CUDA_STANDARD AND NOT CMAKE_CUDA_FLAGS MATCHES "-std=")
        if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.30)
          set(CMAKE_CUDA_STANDARD 20)
        else()
          # Older CMake does not know how to ask nvcc 13 for C++20.
          string(APPEND CMAKE_CUDA_FLAGS " -std=c++20")
        endif()
      endif()
    endif()
  endif()
endmacro()

function(kfactor_kokkos_sources)
  if(KFACTOR_KOKKOS_LANGUAGE STREQUAL "CUDA")
    set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CUDA)
  endif()
endfunction()

# kfactor_add_kokkos_sources(<target> <files>...): target_sources plus the
# CUDA language mark, usable from any directory (TARGET_DIRECTORY scope).
function(kfactor_add_kokkos_sources target)
  target_sources(${target} PRIVATE ${ARGN})
  if(KFACTOR_KOKKOS_LANGUAGE STREQUAL "CUDA")
    set_source_files_properties(${ARGN} TARGET_DIRECTORY ${target} PROPERTIES LANGUAGE CUDA)
  endif()
endfunction()

# -march for kfactor's host code (C++ sources; CUDA sources keep nvcc's
# defaults). Debian's Kokkos carries no architecture flags, so without this
# the host kernels (SpMM, the NMF tile sweep, bit counts) compile for the
# x86-64 baseline: 2-wide vectors and no popcnt instruction. "native" is
# resolved to the CPU's name (GCC: -march=native -Q --help=target), so that
# the flag on the command line, and thus a ccache key, differs between CPUs.
macro(kfactor_setup_host_arch)
  set(KFACTOR_HOST_ARCH_RESOLVED "")
  if(KFACTOR_HOST_ARCH STREQUAL "native")
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -march=native -Q --help=target
        OUTPUT_VARIABLE _kf_target ERROR_QUIET RESULT_VARIABLE _kf_rc)
      if(_kf_rc EQUAL 0 AND _kf_target MATCHES "-march=[ \t]+([^ \t\n]+)")
        set(KFACTOR_HOST_ARCH_RESOLVED ${CMAKE_MATCH_1})
      endif()
    else()
      set(KFACTOR_HOST_ARCH_RESOLVED native)
    endif()
  elseif(NOT KFACTOR_HOST_ARCH STREQUAL "none" AND NOT KFACTOR_HOST_ARCH STREQUAL "")
    set(KFACTOR_HOST_ARCH_RESOLVED ${KFACTOR_HOST_ARCH})
  endif()
  if(KFACTOR_HOST_ARCH_RESOLVED)
    include(CheckCXXCompilerFlag)
    check_cxx_compiler_flag(-march=${KFACTOR_HOST_ARCH_RESOLVED} KFACTOR_HOST_ARCH_OK)
    if(KFACTOR_HOST_ARCH_OK)
      add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=${KFACTOR_HOST_ARCH_RESOLVED}>)
      # On AVX-512 CPUs GCC and Clang still prefer 256-bit vectors (older
      # CPUs clocked down for 512-bit ones); the host kernels' register blocks
      # are sized for the whole register file (gemm_skinny.hpp). A no-op
      # without AVX-512; rejected, and left out, off x86.
      check_cxx_compiler_flag(-mprefer-vector-width=512 KFACTOR_HOST_VECTOR_512_OK)
      if(KFACTOR_HOST_VECTOR_512_OK)
        add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-mprefer-vector-width=512>)
      endif()
    else()
      message(WARNING "kfactor: the compiler rejects -march=${KFACTOR_HOST_ARCH_RESOLVED}; host code stays generic")
      set(KFACTOR_HOST_ARCH_RESOLVED "")
    endif()
  endif()
endmacro()
