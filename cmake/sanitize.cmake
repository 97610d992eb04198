# CANOPY_SANITIZE: a comma-separated list of sanitizers (address, undefined, leak, ...)
# compiled into every target: the planner and config libraries, libcanopy.so, the tools
# and the test programs. Empty (the default) builds without sanitizers.
#
#   cmake -S . -B build-asan -DCANOPY_SANITIZE=address,undefined
#
# UndefinedBehaviorSanitizer is made fatal (-fno-sanitize-recover), so undefined
# behaviour fails the test that hits it instead of printing a line nobody reads.
#
# With `address`, a sanitized libcanopy.so preloaded into a program must come after the
# ASan runtime: CANOPY_TEST_PRELOAD holds the LD_PRELOAD value the tests use
# (libasan.so:libcanopy.so with ASan, libcanopy.so without), and CANOPY_SANITIZER_ENV the
# variables every test runs with (suppression files in tests/sanitizers/; added to the
# tests by canopy_test_environment(), cmake/test_environment.cmake).
set(CANOPY_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined (empty: none)")

set(CANOPY_ASAN_RUNTIME "")
set(CANOPY_SANITIZER_ENV "")
if(CANOPY_SANITIZE)
  string(REPLACE "," ";" canopy_sanitizers "${CANOPY_SANITIZE}")
  set(canopy_sanitize_flags -fsanitize=${CANOPY_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST canopy_sanitizers)
    list(APPEND canopy_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options(${canopy_sanitize_flags})
  add_link_options(-fsanitize=${CANOPY_SANITIZE})
  message(STATUS "Canopy: sanitizers ${CANOPY_SANITIZE}")

  set(sup ${PROJECT_SOURCE_DIR}/tests/sanitizers)
  # halt_on_error: the first report ends the process with a non-zero status.
  list(APPEND CANOPY_SANITIZER_ENV
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
       "LSAN_OPTIONS=suppressions=${sup}/lsan.supp:print_suppressions=0"
       # libhwloc-plugins (Open MPI's packages bring it) has a plugin that MPICH's
       # MPI_Init loads and that loses 136 bytes; LeakSanitizer's stack ends inside the
       # unloaded plugin, so no suppression can name it (valgrind.supp does, with the
       # full stack). Loading no hwloc plugins keeps MPICH's own topology discovery.
       "HWLOC_PLUGINS_PATH=/nonexistent/canopy-tests-load-no-hwloc-plugins")
  if("address" IN_LIST canopy_sanitizers AND CANOPY_BUILD_TESTS)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      message(WARNING "CANOPY_SANITIZE=address: the preload tests need GCC's shared ASan runtime")
    endif()
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                    OUTPUT_VARIABLE CANOPY_ASAN_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
    # detect_leaks: LeakSanitizer runs at every process exit (MPICH's own leaks are in
    # lsan.supp). ASan's interceptors need its runtime first in the library list; the
    # tests preload it before libcanopy.so (see CANOPY_TEST_PRELOAD).
    list(APPEND CANOPY_SANITIZER_ENV "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1")
  endif()
endif()

# The LD_PRELOAD value that loads Canopy into an MPI program in the tests.
if(CANOPY_ASAN_RUNTIME)
  set(CANOPY_TEST_PRELOAD "${CANOPY_ASAN_RUNTIME}:$<TARGET_FILE:canopy>")
else()
  set(CANOPY_TEST_PRELOAD "$<TARGET_FILE:canopy>")
endif()
