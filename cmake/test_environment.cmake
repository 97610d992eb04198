# canopy_test_environment(): adds the variables every test runs with to every test
# registered so far in the current directory: CANOPY_SANITIZER_ENV (cmake/sanitize.cmake)
# and CANOPY_MPI_TEST_ENV (cmake/mpi_flavor.cmake). Tests set their own ENVIRONMENT
# property when they are registered, so this appends afterwards (CMake 3.25 sets test
# properties per directory only); each tests/ CMakeLists.txt that adds tests calls it last.
function(canopy_test_environment)
  set(env ${CANOPY_SANITIZER_ENV} ${CANOPY_MPI_TEST_ENV})
  if(NOT env)
    return()
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${env})
  endforeach()
endfunction()
