# Before project(): with CANOPY_MPI=smpi, SimGrid's compiler wrappers become the C and
# C++ compilers of the whole build directory (cmake/smpi.cmake builds only what SMPI
# runs). SMPI's MPI is not a library beside the program but the simulator that loads
# it: smpicc/smpicxx add its headers, force-include smpi_helpers.h (which reroutes
# sleep, gettimeofday and the like to simulated time) and link every binary as a
# shared object for smpirun to load, one private copy per simulated rank. A user-given
# CMAKE_C_COMPILER or CMAKE_CXX_COMPILER still wins.
if(NOT CANOPY_MPI STREQUAL "smpi")
  return()
endif()
find_program(CANOPY_SMPICC smpicc)
find_program(CANOPY_SMPICXX smpicxx)
if(NOT CANOPY_SMPICC OR NOT CANOPY_SMPICXX)
  message(FATAL_ERROR "CANOPY_MPI=smpi needs SimGrid's smpicc and smpicxx (Debian: apt-get install "
                      "libsimgrid-dev; tools/setup.sh --smpi installs it)")
endif()
if(NOT CMAKE_C_COMPILER)
  set(CMAKE_C_COMPILER ${CANOPY_SMPICC})
endif()
if(NOT CMAKE_CXX_COMPILER)
  set(CMAKE_CXX_COMPILER ${CANOPY_SMPICXX})
endif()
