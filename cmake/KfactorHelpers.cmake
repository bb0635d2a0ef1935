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
