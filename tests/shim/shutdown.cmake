# How jobs end with Canopy preloaded (issue 14): MPI_Finalize over UCX's tcp transport,
# another PMPI tool preloaded beside Canopy, MPI_Abort and a killed rank. Included from
# tests/CMakeLists.txt after checks.cmake.
set(shim_tests ${CMAKE_CURRENT_LIST_DIR})

add_executable(finalize_tcp ${shim_tests}/finalize_tcp.c ${shim_tests}/canopy_check.h)
set_target_properties(finalize_tcp PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_definitions(finalize_tcp PRIVATE _GNU_SOURCE)
target_compile_options(finalize_tcp PRIVATE $<$<C_COMPILER_ID:GNU,Clang>:-Wall -Wextra>)
target_link_libraries(finalize_tcp PRIVATE MPI::MPI_C ${CMAKE_DL_LIBS})

# MPICH 4.0.x's MPI_Finalize hangs over UCX tcp when a rank's peer has finished closing
# before it (reproduced natively and with Canopy's helper off); with Canopy every run
# ends (shim/finalize_progress.h). MPICH only (UCX, hydra's MPIEXEC_TIMEOUT); steps 1-2
# only in the plain build (they test MPICH, each hang costs the bound).
if(CANOPY_MPI STREQUAL "mpich")
  set(reproduce)
  if(CANOPY_SANITIZE)
    set(reproduce --no-reproduce)
  endif()
  add_test(NAME "mpi preload: finalize over tcp, a late rank: MPICH hangs, Canopy ends"
           COMMAND ${shim_tests}/finalize_tcp.sh ${MPIEXEC_EXECUTABLE} ${CANOPY_TEST_PRELOAD}
                   $<TARGET_FILE:finalize_tcp> ${reproduce} 8)
  set_tests_properties("mpi preload: finalize over tcp, a late rank: MPICH hangs, Canopy ends" PROPERTIES
                       LABELS "mpi;preload" TIMEOUT 180 PROCESSORS 4)
endif()
