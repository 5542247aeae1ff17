# The CUDA backend: -DNNPERF_CUDA=AUTO (default: built when nvcc is found), ON (nvcc required) or
# OFF. Sets NNPERF_HAVE_CUDA. Device code is compiled for sm_80 and sm_90 unless
# CMAKE_CUDA_ARCHITECTURES says otherwise. The static CUDA runtime is linked, so nnperf starts on
# machines without the NVIDIA driver and reports the missing device at run time; cuBLAS, like
# cuDNN and NVML, is loaded at run time (libcublas.so.13: its soname, else the toolkit's folder).
set(NNPERF_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE NNPERF_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${NNPERF_CUDA}" _nnperf_cuda)
if(NOT _nnperf_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "NNPERF_CUDA='${NNPERF_CUDA}': expected AUTO, ON or OFF")
endif()

set(NNPERF_HAVE_CUDA OFF)
if(NOT _nnperf_cuda STREQUAL "OFF")
  # The toolkit's usual place when nvcc is not on PATH.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc 13's C++20 flag; the .cu files include C++20 headers of the
    # project, so it is taught here.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    find_package(CUDAToolkit REQUIRED)
    set(NNPERF_HAVE_CUDA ON)
    message(STATUS "nnperf: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_nnperf_cuda STREQUAL "ON")
    message(FATAL_ERROR "NNPERF_CUDA=ON but no CUDA compiler (nvcc) was found: put nvcc on PATH, "
                        "set CUDACXX, or configure with -DNNPERF_CUDA=AUTO")
  else()
    message(STATUS "nnperf: CUDA backend OFF (no nvcc found)")
  endif()
else()
  message(STATUS "nnperf: CUDA backend OFF (NNPERF_CUDA=OFF)")
endif()
