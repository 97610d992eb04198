# CANOPY_MPI=smpi: libcanopy.so and the SMPI tests for SimGrid's simulated MPI.
#
#   cmake -S . -B build-smpi -DCANOPY_MPI=smpi && cmake --build build-smpi -j2
#   tools/sim/canopy-sim --help                      run a program on a simulated cluster
#
# Only the planner, config and shim libraries are built, and the SMPI test program:
# smpicxx links every executable as a shared object for smpirun to load (the unit tests
# and tools would not run), and the unit tests do not depend on the MPI (the MPICH
# build runs them). Under SMPI LD_PRELOAD does not reach the program (SMPI's own
# MPI_* win): programs link libcanopy.so instead (-Wl,--no-as-needed, since SMPI's MPI
# symbols are weak and the linker would otherwise drop it), and smpirun privatizes it
# per rank (--cfg=smpi/privatize-libs). What Canopy does differently when simulated is
# decided in one place, shim/platform.cpp.
message(STATUS "Canopy: MPI smpi (SimGrid ${CMAKE_CXX_COMPILER})")
find_program(CANOPY_SMPIRUN smpirun REQUIRED)
# The compilers are the MPI: an empty MPI::MPI_C keeps the libraries' target_link_libraries as they are.
add_library(MPI::MPI_C INTERFACE IMPORTED)
# smpi_helpers.h (force-included by the wrappers) turns malloc, free and exit into
# macros for SMPI's shared-malloc tracing, which breaks C++ (std::free(p) would become
# std::smpi_shared_free(p)); Canopy never asks SMPI to share its memory.
add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC)
find_package(spdlog REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
include(GNUInstallDirs)
add_subdirectory(planner)
add_subdirectory(config)
add_subdirectory(shim)
if(CANOPY_BUILD_TESTS)
  enable_testing()
  add_subdirectory(tests/smpi)
endif()
