# tilec.cmake: tilec_add_library(), which compiles .tile files into a library target. Part of tilec's CMake
# package (tilecConfig.cmake includes it after setting TILEC_EXECUTABLE).
#
#   tilec_add_library(<target>
#       SOURCES a.tile [b.tile ...]          .tile files (relative to the current source folder)
#       [ARCH sm_80 sm_90a ...]              targets (default sm_90a)
#       [DEFINES M=4096 "dtype=float16" ...] -D NAME=VALUE for every source
#       [EXPORTS "g=matmul(4096, 4096, 4096)" ...]   --export NAME=CALL for every source
#       [MODE cuda|binary]                   default cuda
#       [TUNED k.tune.json ...]              tables of `tilec tune`: --tuned for the source the table was
#                                            tuned on (the table's "file", matched by file name)
#       [OPTIONS --prefix=p -Werror ...]     any other tilec options, as written
#       [TORCH])                             PyTorch operators too (below)
#
# Each a.tile becomes a.cu (MODE cuda) or a.c (MODE binary) and a.h, written into
# ${CMAKE_CURRENT_BINARY_DIR}/<target>.tilec/ by add_custom_command with tilec's depfile, so a change to a .tile
# file (or to the tilec command) regenerates exactly what depends on it. tilec rewrites an output only when its bytes
# change, and the Ninja generator gives custom commands `restat`, so a comment-only edit reruns tilec and compiles
# nothing after it (with the Makefile generators, make itself sees the unchanged mtime). <target> is a STATIC library whose
# PUBLIC include path holds the headers: `target_link_libraries(app PRIVATE <target>)` then `#include "a.h"`.
#
#   MODE cuda    the .cu files are compiled by CMake's CUDA language (enabled here when the project has not
#                enabled it), CUDA_ARCHITECTURES from ARCH: a cubin per target and the PTX of the lowest one;
#                the target links the CUDA runtime (CUDA::cudart_static, or CUDA::cudart when
#                CMAKE_CUDA_RUNTIME_LIBRARY is Shared).
#   MODE binary  tilec compiles the kernels itself (NVRTC) and writes C with the cubins and PTX embedded and the
#                launch code on the driver API; CMake compiles it as C. The target links libcuda only
#                (tilec::cuda_driver), and the project needs no CUDA compiler or nvcc: the CUDA language is
#                never enabled for it, and CUDA's headers and libcuda are found without FindCUDAToolkit.
#
# Paths in the generated files are relative: the source folder reads as `.`, the build folder as `build`
# (tilec's --file-prefix-map), so the bytes do not depend on where the trees lie. <target>_generate builds the
# generated files alone.
#   TORCH        tilec also writes a.torch.cpp (--emit=torch: each kernel a PyTorch operator, namespace tilec or
#                the --prefix), compiled against LibTorch (find_package(Torch), called here when the project has
#                not) into a SHARED library <target>_torch that links <target>: load it from Python with
#                torch.ops.load_library, or link it into a LibTorch program (with --no-as-needed: nothing calls
#                it by name, its registrations run when it loads).
# The generated header is the same in both modes, so switching MODE changes no application code.
# The target's property TILEC_HEADERS lists the generated headers. The first call also defines
# tilec::cuda_driver (libcuda and the CUDA include folder), for applications that call the driver API.
include_guard(GLOBAL)

if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "tilec_add_library needs CMake 3.20 or newer (depfiles with every generator)")
endif()
# depfile paths are taken as written (tilec writes absolute ones here): the behaviour of CMake 3.20+
cmake_policy(SET CMP0116 NEW)

# A macro so that enable_language(), which CMake allows only outside functions, runs in the caller's scope.
macro(tilec_add_library _tilec_target)
  cmake_parse_arguments(_tilec_peek "TORCH" "MODE" "" ${ARGN})
  get_property(_tilec_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(_tilec_peek_TORCH AND NOT "CXX" IN_LIST _tilec_languages)
    enable_language(CXX)
  endif()
  if(_tilec_peek_TORCH AND NOT TARGET torch)
    find_package(Torch REQUIRED)
  endif()
  if(NOT DEFINED _tilec_peek_MODE)
    set(_tilec_peek_MODE cuda)
  endif()
  get_property(_tilec_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(_tilec_peek_MODE STREQUAL "cuda" AND NOT "CUDA" IN_LIST _tilec_languages)
    enable_language(CUDA)
  elseif(_tilec_peek_MODE STREQUAL "binary" AND NOT "C" IN_LIST _tilec_languages)
    enable_language(C)
  endif()
  if(_tilec_peek_MODE STREQUAL "cuda" AND NOT TARGET CUDA::cudart_static)
    find_package(CUDAToolkit REQUIRED)
  endif()
  _tilec_find_cuda_driver()
  unset(_tilec_languages)
  unset(_tilec_peek_MODE)
  unset(_tilec_peek_TORCH)
  unset(_tilec_peek_UNPARSED_ARGUMENTS)
  unset(_tilec_peek_KEYWORDS_MISSING_VALUES)
  _tilec_add_library(${_tilec_target} ${ARGN})
endmacro()

# tilec::cuda_driver: libcuda and the CUDA headers, found without nvcc (CMake 3.25's FindCUDAToolkit wants nvcc
# or a version.txt that CUDA 12+ no longer ships). Links the real library where the build machine has one, else
# the toolkit's stub, which names libcuda.so.1 for the driver at run time.
function(_tilec_find_cuda_driver)
  if(TARGET tilec::cuda_driver)
    return()
  endif()
  set(roots ${CUDAToolkit_LIBRARY_ROOT} $ENV{CUDA_PATH} $ENV{CUDA_HOME} /usr/local/cuda)
  find_path(TILEC_CUDA_INCLUDE_DIR cuda.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${roots} PATH_SUFFIXES include
            DOC "the folder of cuda.h and cuda_runtime_api.h")
  find_library(TILEC_CUDA_DRIVER_LIBRARY cuda HINTS ${CUDAToolkit_LIBRARY_DIR} ${roots}
               PATH_SUFFIXES lib64 lib lib/x64 DOC "libcuda (the driver, or the toolkit's stub)")
  if(NOT TILEC_CUDA_DRIVER_LIBRARY)
    find_library(TILEC_CUDA_DRIVER_LIBRARY cuda HINTS ${CUDAToolkit_LIBRARY_DIR} ${roots}
                 PATH_SUFFIXES lib64/stubs lib/stubs stubs)
  endif()
  if(NOT TILEC_CUDA_INCLUDE_DIR OR NOT TILEC_CUDA_DRIVER_LIBRARY)
    message(FATAL_ERROR "tilec_add_library: the CUDA headers (cuda.h) or libcuda were not found; set CUDA_PATH, "
                        "or TILEC_CUDA_INCLUDE_DIR and TILEC_CUDA_DRIVER_LIBRARY")
  endif()
  add_library(tilec::cuda_driver INTERFACE IMPORTED GLOBAL)
  target_include_directories(tilec::cuda_driver INTERFACE "${TILEC_CUDA_INCLUDE_DIR}")
  target_link_libraries(tilec::cuda_driver INTERFACE "${TILEC_CUDA_DRIVER_LIBRARY}")
endfunction()

# sm_80 sm_90a -> 80 90a-real: a cubin for each, and PTX of the lowest for the JIT on newer devices, as
# tilec's own -arch does.
function(_tilec_cuda_architectures out)
  set(numbers)
  foreach(a IN LISTS ARGN)
    string(REGEX REPLACE "^sm_" "" n "${a}")
    list(APPEND numbers "${n}")
  endforeach()
  list(SORT numbers COMPARE NATURAL)
  list(REMOVE_DUPLICATES numbers)
  set(result)
  foreach(n IN LISTS numbers)
    if(result)
      list(APPEND result "${n}-real")
    else()
      list(APPEND result "${n}")
    endif()
  endforeach()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(_tilec_add_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TORCH" "MODE" "SOURCES;ARCH;DEFINES;EXPORTS;OPTIONS;TUNED")
  set(fn "tilec_add_library(${target})")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${fn}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${fn}: SOURCES names no .tile file")
  endif()
  if(NOT arg_MODE)
    set(arg_MODE cuda)
  endif()
  if(NOT arg_MODE MATCHES "^(cuda|binary)$")
    message(FATAL_ERROR "${fn}: MODE is '${arg_MODE}'; it must be cuda or binary")
  endif()
  if(NOT arg_ARCH)
    set(arg_ARCH sm_90a)
  endif()
  foreach(a IN LISTS arg_ARCH)
    if(NOT a MATCHES "^sm_[0-9]+a?$")
      message(FATAL_ERROR "${fn}: ARCH '${a}' is not a target like sm_80 or sm_90a")
    endif()
  endforeach()
  if(NOT TILEC_EXECUTABLE)
    message(FATAL_ERROR "${fn}: TILEC_EXECUTABLE is not set (use find_package(tilec CONFIG))")
  endif()

  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${target}.tilec")
  file(MAKE_DIRECTORY "${dir}/include")   # Ninja makes output folders, the Makefile generators do not
  string(JOIN "," arch_option ${arg_ARCH})
  set(common -arch=${arch_option})
  foreach(d IN LISTS arg_DEFINES)
    list(APPEND common -D "${d}")
  endforeach()
  foreach(e IN LISTS arg_EXPORTS)
    list(APPEND common --export "${e}")
  endforeach()
  # Each table goes to the source of its "file" (by file name); one that fits no source is a mistake.
  set(tables)
  set(table_files)
  foreach(t IN LISTS arg_TUNED)
    get_filename_component(table "${t}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(READ "${table}" json)
    string(JSON tuned_file ERROR_VARIABLE json_error GET "${json}" file)
    if(json_error)
      message(FATAL_ERROR "${fn}: TUNED ${t} is not a tilec tune table (${json_error})")
    endif()
    get_filename_component(tuned_file "${tuned_file}" NAME)
    set(matched FALSE)
    foreach(s IN LISTS arg_SOURCES)
      get_filename_component(sname "${s}" NAME)
      if(sname STREQUAL tuned_file)
        set(matched TRUE)
      endif()
    endforeach()
    if(NOT matched)
      message(FATAL_ERROR "${fn}: TUNED ${t} was tuned on ${tuned_file}, which is not among SOURCES")
    endif()
    list(APPEND tables "${table}")
    list(APPEND table_files "${tuned_file}")
  endforeach()
  # Outputs name the source and build folders relatively (#line directives, comments), so two build trees, or two
  # checkouts, generate the same bytes and compiler caches hit. The build folder's map comes last: it wins where
  # the build folder lies inside the source folder. OPTIONS come after and may map differently.
  list(APPEND common "--file-prefix-map=${CMAKE_SOURCE_DIR}=." "--file-prefix-map=${CMAKE_BINARY_DIR}=build")
  list(APPEND common ${arg_OPTIONS})
  if(arg_MODE STREQUAL "cuda")
    set(ext cu)
  else()
    set(ext c)
  endif()

  set(names)
  set(outputs)
  set(headers)
  set(torch_sources)
  foreach(s IN LISTS arg_SOURCES)
    get_filename_component(src "${s}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    get_filename_component(name "${src}" NAME_WLE)
    if(name IN_LIST names)
      message(FATAL_ERROR "${fn}: two sources are named ${name}.tile; their headers would clash")
    endif()
    list(APPEND names "${name}")
    set(out "${dir}/${name}.${ext}")
    set(hdr "${dir}/include/${name}.h")
    set(dep "${dir}/${name}.d")
    get_filename_component(sname "${src}" NAME)
    set(tuned)
    set(i 0)
    foreach(table IN LISTS tables)
      list(GET table_files ${i} tuned_file)
      if(tuned_file STREQUAL sname)
        list(APPEND tuned --tuned "${table}")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
    set(torch_output)
    set(torch_option)
    if(arg_TORCH)
      set(torch_output "${dir}/${name}.torch.cpp")
      set(torch_option --emit=torch)
      list(APPEND torch_sources "${torch_output}")
    endif()
    add_custom_command(
      OUTPUT "${out}" "${hdr}" ${torch_output}
      COMMAND "${TILEC_EXECUTABLE}" "${src}" ${common} ${tuned} ${torch_option} -o "${out}" -H "${hdr}" -MD -MF "${dep}"
              -MT "${out}"
      DEPENDS "${src}" "${TILEC_EXECUTABLE}" ${tables}
      DEPFILE "${dep}"
      COMMENT "tilec ${s} -> ${name}.${ext}, ${name}.h"
      VERBATIM)
    list(APPEND outputs "${out}")
    list(APPEND headers "${hdr}")
  endforeach()

  add_library(${target} STATIC ${outputs} ${headers})
  add_custom_target(${target}_generate DEPENDS ${outputs} ${headers} ${torch_sources})   # the generated files alone
  target_include_directories(${target} PUBLIC "${dir}/include")
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON TILEC_HEADERS "${headers}")
  if(arg_MODE STREQUAL "cuda")
    _tilec_cuda_architectures(cuda_archs ${arg_ARCH})
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${cuda_archs}" CUDA_STANDARD 17
                                               CUDA_STANDARD_REQUIRED ON)
    # the CUDA runtime the project chose (CMAKE_CUDA_RUNTIME_LIBRARY, static by default): CMake also links that
    # one into programs that link this library, and one program must not hold two runtimes
    if(CMAKE_CUDA_RUNTIME_LIBRARY MATCHES "^[Ss][Hh][Aa][Rr][Ee][Dd]$")
      target_link_libraries(${target} PUBLIC CUDA::cudart)
    else()
      target_link_libraries(${target} PUBLIC CUDA::cudart_static)
    endif()
  else()
    set_source_files_properties(${outputs} PROPERTIES LANGUAGE C)
    target_link_libraries(${target} PUBLIC tilec::cuda_driver)
  endif()
  if(arg_TORCH)
    # The operators' registrations run when the library loads: a shared library, so no linker drops them.
    add_library(${target}_torch SHARED ${torch_sources})
    set_source_files_properties(${torch_sources} PROPERTIES LANGUAGE CXX)
    # PyTorch's headers ask for C++17, C++20 from 2.10 on; the generated code is both.
    if(DEFINED Torch_VERSION AND Torch_VERSION VERSION_LESS 2.10)
      set(torch_std 17)
    else()
      set(torch_std 20)
    endif()
    set_target_properties(${target}_torch PROPERTIES CXX_STANDARD ${torch_std} CXX_STANDARD_REQUIRED ON)
    target_include_directories(${target}_torch PRIVATE "${dir}/include")
    if(NOT TORCH_LIBRARIES)
      set(TORCH_LIBRARIES torch)   # the project found Torch in another scope: its imported target
    endif()
    target_link_libraries(${target}_torch PRIVATE ${target} tilec::cuda_driver ${TORCH_LIBRARIES})
    if(TORCH_CXX_FLAGS)
      separate_arguments(torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
      target_compile_options(${target}_torch PRIVATE ${torch_flags})
    endif()
  endif()
endfunction()
