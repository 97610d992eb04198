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

# Another PMPI tool preloaded beside Canopy (tests/shim/pmpi_counter.c): results stay
# right in either order, and each sees what stacking.c's header says (the program
# checks the counts itself; the counter's own line at MPI_Finalize shows it ran there).
add_library(pmpi_counter SHARED ${shim_tests}/pmpi_counter.c)
target_link_libraries(pmpi_counter PRIVATE MPI::MPI_C)
set_target_properties(pmpi_counter PROPERTIES C_VISIBILITY_PRESET hidden)
add_executable(stacking ${shim_tests}/stacking.c ${shim_tests}/canopy_check.h)
set_target_properties(stacking PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_definitions(stacking PRIVATE _GNU_SOURCE)
target_link_libraries(stacking PRIVATE MPI::MPI_C ${CMAKE_DL_LIBS})
set(asan_first "")
if(CANOPY_ASAN_RUNTIME)
  set(asan_first "${CANOPY_ASAN_RUNTIME}:")
endif()
set(stack_counter "${asan_first}$<TARGET_FILE:pmpi_counter>")
set(stack_counter-first "${asan_first}$<TARGET_FILE:pmpi_counter>:$<TARGET_FILE:canopy>")
set(stack_canopy-first "${CANOPY_TEST_PRELOAD}:$<TARGET_FILE:pmpi_counter>")
# Each order's counter line (rank 0's: mpiexec may run the ranks' last lines together):
# the calls that reached it (20 rounds on each of 3 ranks).
set(line_counter "MPI_Init 1, MPI_Reduce 20, MPI_Bcast 20, MPI_Send 20, MPI_Recv 20, MPI_Isend 0, MPI_Irecv 0, MPI_Finalize 1")
set(line_counter-first "${line_counter}")
set(line_canopy-first "MPI_Init 1, MPI_Reduce 0, MPI_Bcast 0, MPI_Send 20, MPI_Recv 20, MPI_Isend 0, MPI_Irecv 0, MPI_Finalize 1")
foreach(order counter counter-first canopy-first)
  if(CANOPY_MPI STREQUAL "openmpi")
    set(preload_args -x "LD_PRELOAD=${stack_${order}}")
  else()
    set(preload_args -genv LD_PRELOAD "${stack_${order}}")
  endif()
  add_test(NAME "mpi preload: stacking with another PMPI tool, ${order}"
           COMMAND ${expect} 1 1 "pmpi_counter: rank 0: ${line_${order}}" --
                   ${MPIEXEC_EXECUTABLE} ${preload_args} -n 3 $<TARGET_FILE:stacking> --order=${order})
  set_tests_properties("mpi preload: stacking with another PMPI tool, ${order}" PROPERTIES
                       LABELS "mpi;preload" TIMEOUT 120 PROCESSORS 3)
endforeach()

# MPI_Abort from one rank, and a rank killed with SIGKILL, while the others wait for it
# inside a collective: the job ends as it does natively (within 60 s, with the status the
# launcher gives such a job: MPI_Abort's code 7; for the kill, Open MPI's 137 and MPICH's
# 9 or 15, see job_end.sh). With MPICH also over UCX tcp, where the survivors'
# connections to the dead rank break.
add_executable(abort_kill ${shim_tests}/abort_kill.c ${shim_tests}/canopy_check.h)
set_target_properties(abort_kill PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_definitions(abort_kill PRIVATE _GNU_SOURCE)
target_link_libraries(abort_kill PRIVATE MPI::MPI_C ${CMAKE_DL_LIBS})
# job_end_case(<transport> <np> [launcher arguments...])
function(job_end_case transport np)
  if(CANOPY_MPI STREQUAL "mpich")
    set(statuses_kill "9,15")
  else()
    set(statuses_kill "137")
  endif()
  set(statuses_abort 7)
  foreach(mode abort kill)
    set(name "mpi preload: ${mode} a rank mid-collective, ${transport}, np${np}: the job ends as natively")
    add_test(NAME "${name}"
             COMMAND ${shim_tests}/job_end.sh 60 ${CANOPY_MPI} ${CANOPY_TEST_PRELOAD} ${statuses_${mode}}
                     ${MPIEXEC_EXECUTABLE}
                     ${ARGN} -n ${np} $<TARGET_FILE:abort_kill> --mode=${mode} --victim=1 --at=5)
    set_tests_properties("${name}" PROPERTIES LABELS "mpi;preload" TIMEOUT 180 PROCESSORS ${np})
  endforeach()
endfunction()
job_end_case("shared memory" 3)
if(CANOPY_MPI STREQUAL "mpich")
  job_end_case(tcp 4 -genv UCX_TLS tcp,self)
endif()
