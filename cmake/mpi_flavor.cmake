# CANOPY_MPI: which installed MPI Canopy is built against and tested with.
#
#   cmake -S . -B build                                  MPICH (the default)
#   cmake -S . -B build-openmpi -DCANOPY_MPI=openmpi      Open MPI
#   cmake -S . -B build-smpi -DCANOPY_MPI=smpi            SimGrid's SMPI (cmake/smpi.cmake)
#
# Debian installs both side by side, and its plain mpicc/mpiexec/mpif90 alternatives
# follow whichever was installed last, so the wrappers are named explicitly
# (mpicc.mpich or mpicc.openmpi, ...). A user-given MPI_C_COMPILER, MPI_Fortran_COMPILER
# or MPIEXEC_EXECUTABLE still wins.
#
# It also sets what the tests need to launch programs under this MPI:
#   CANOPY_MPIEXEC_PRELOAD  mpiexec arguments that set LD_PRELOAD=${CANOPY_TEST_PRELOAD}
#                           for the ranks only (MPICH's -genv, Open MPI's -x)
#   CANOPY_MPI_TEST_ENV     variables every test runs with (canopy_test_environment())
set(CANOPY_MPI mpich CACHE STRING "The MPI to build and test against: mpich, openmpi or smpi")
set_property(CACHE CANOPY_MPI PROPERTY STRINGS mpich openmpi smpi)
set(canopy_mpi_allowed mpich openmpi smpi)
if(NOT CANOPY_MPI IN_LIST canopy_mpi_allowed)
  message(FATAL_ERROR "CANOPY_MPI='${CANOPY_MPI}' is not valid (allowed: mpich, openmpi, smpi)")
endif()
message(STATUS "Canopy: MPI ${CANOPY_MPI}")

# Switching CANOPY_MPI in a configured build directory would mix the two: FindMPI's
# cached results (include paths, libraries) belong to the first.
if(DEFINED CACHE{CANOPY_MPI_CONFIGURED} AND NOT CANOPY_MPI_CONFIGURED STREQUAL CANOPY_MPI)
  message(FATAL_ERROR "CANOPY_MPI='${CANOPY_MPI}', but ${CMAKE_BINARY_DIR} was configured with "
                      "CANOPY_MPI='${CANOPY_MPI_CONFIGURED}': use a fresh build directory per MPI "
                      "(or configure this one with -DCANOPY_MPI=${CANOPY_MPI_CONFIGURED})")
endif()
set(CANOPY_MPI_CONFIGURED ${CANOPY_MPI} CACHE INTERNAL "CANOPY_MPI of this build directory's first configure")
# SMPI has no mpicc.smpi or mpiexec: cmake/smpi_compilers.cmake and cmake/smpi.cmake.
if(CANOPY_MPI STREQUAL "smpi")
  return()
endif()

string(TOUPPER ${CANOPY_MPI} canopy_mpi_upper)
find_program(CANOPY_${canopy_mpi_upper}_CC mpicc.${CANOPY_MPI})
find_program(CANOPY_${canopy_mpi_upper}_EXEC mpiexec.${CANOPY_MPI})
if(NOT MPI_C_COMPILER AND CANOPY_${canopy_mpi_upper}_CC)
  set(MPI_C_COMPILER ${CANOPY_${canopy_mpi_upper}_CC} CACHE FILEPATH "MPI C compiler wrapper")
endif()
if(NOT MPIEXEC_EXECUTABLE AND CANOPY_${canopy_mpi_upper}_EXEC)
  set(MPIEXEC_EXECUTABLE ${CANOPY_${canopy_mpi_upper}_EXEC} CACHE FILEPATH "MPI launcher")
endif()

# canopy_select_mpi_fortran(): the same for the Fortran wrapper (mpif90.<mpi>); called
# by the tests before find_package(MPI COMPONENTS Fortran), once a Fortran compiler is
# known to exist.
function(canopy_select_mpi_fortran)
  find_program(CANOPY_${canopy_mpi_upper}_F90 mpif90.${CANOPY_MPI})
  if(NOT MPI_Fortran_COMPILER AND CANOPY_${canopy_mpi_upper}_F90)
    set(MPI_Fortran_COMPILER ${CANOPY_${canopy_mpi_upper}_F90} CACHE FILEPATH "MPI Fortran compiler wrapper")
  endif()
endfunction()

set(CANOPY_MPI_TEST_ENV "")
if(CANOPY_MPI STREQUAL "openmpi")
  set(CANOPY_MPIEXEC_PRELOAD -x "LD_PRELOAD=${CANOPY_TEST_PRELOAD}")
  # Open MPI's mpiexec refuses to start more ranks than cores (the tests run up to 6 on
  # 2-core machines) and, without two confirmations, to run as root (CI does). These
  # variables say --oversubscribe (the MCA parameter rmaps_base_oversubscribe) and
  # --allow-run-as-root (the two variables mpiexec's refusal names) through the
  # environment, so they reach every mpiexec the tests start, scripts included.
  # btl self,vader: ranks talk through shared memory only; the tests run on one node,
  # and leaving out tcp (and the ofi/openib components Debian already disables) keeps
  # Open MPI from probing network interfaces. single_copy_mechanism none: vader's
  # default copies with process_vm_readv, which containers often forbid (Docker's
  # seccomp profile without CAP_SYS_PTRACE: "Read -1, expected ..." on every large
  # message, open-mpi/ompi#4948); it works on the development machine, but CI's
  # container may differ, and the copy through shared memory costs the tests nothing.
  list(APPEND CANOPY_MPI_TEST_ENV
       OMPI_MCA_rmaps_base_oversubscribe=1
       OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
       OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none)
else()
  set(CANOPY_MPIEXEC_PRELOAD -genv LD_PRELOAD "${CANOPY_TEST_PRELOAD}")
endif()

# canopy_check_mpi_flavor(): after find_package(MPI) with MPI_DETERMINE_LIBRARY_VERSION,
# says which MPI library was found, and warns when it is not the one CANOPY_MPI names (a
# user-given wrapper wins, but the tests' launcher arguments follow CANOPY_MPI).
function(canopy_check_mpi_flavor)
  set(expected_mpich "MPICH")
  set(expected_openmpi "Open MPI")
  if(NOT MPI_C_LIBRARY_VERSION_STRING OR MPI_C_LIBRARY_VERSION_STRING STREQUAL "NOTFOUND")
    return()  # cross-compiling, or the version program did not run: nothing to check
  endif()
  string(REGEX REPLACE "[,\n].*" "" found "${MPI_C_LIBRARY_VERSION_STRING}")  # its first line or phrase
  string(REGEX REPLACE "[ \t]+" " " found "${found}")
  message(STATUS "Canopy: MPI library: ${found}")
  if(NOT found MATCHES "${expected_${CANOPY_MPI}}")
    message(WARNING "CANOPY_MPI='${CANOPY_MPI}', but the MPI found (${MPI_C_COMPILER}) is \"${found}\": "
                    "the tests will launch it with ${expected_${CANOPY_MPI}}'s mpiexec arguments")
  endif()
endfunction()
