# Checks of what Canopy itself reports and decides, beyond results: included from
# tests/CMakeLists.txt after tests/shim (it uses canopy_add_mpi_test).
set(shim_tests ${CMAKE_CURRENT_LIST_DIR})

add_executable(log_calls ${shim_tests}/log_calls.c)
target_link_libraries(log_calls PRIVATE MPI::MPI_C)
add_executable(check_schedule_log ${shim_tests}/check_schedule_log.cpp)
target_link_libraries(check_schedule_log PRIVATE canopy_planner)
target_include_directories(check_schedule_log PRIVATE ${PROJECT_SOURCE_DIR})

# CANOPY_SCHEDULE_LOG: the files parse, read back into valid schedules and describe
# exactly the calls that ran (a fixture: run, then check). CANOPY_AUTO_TRIALS=0: with
# trials, auto plans (and logs) the model's two best schedules for every call, and
# with several algorithms per collective those differ.
foreach(np 1 3 4)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/schedule-log-np${np})
  add_test(NAME "mpi preload: schedule log np${np} clean" COMMAND ${CMAKE_COMMAND} -E rm -rf ${dir})
  add_test(NAME "mpi preload: schedule log np${np} mkdir" COMMAND ${CMAKE_COMMAND} -E make_directory ${dir})
  canopy_add_mpi_test(NAME "mpi preload: schedule log np${np} run" TARGET log_calls NP ${np} PRELOAD
                      ENV CANOPY_SCHEDULE_LOG=${dir}/rank-%r.jsonl CANOPY_AUTO_TRIALS=0 CANOPYTEST_EXPECT_INTERCEPT=0)
  set(files)
  math(EXPR last "${np} - 1")
  foreach(r RANGE ${last})
    list(APPEND files ${dir}/rank-${r}.jsonl)
  endforeach()
  add_test(NAME "mpi preload: schedule log np${np} check" COMMAND check_schedule_log ${np} ${files})
  set_tests_properties("mpi preload: schedule log np${np} clean" PROPERTIES FIXTURES_SETUP log${np}clean LABELS mpi)
  set_tests_properties("mpi preload: schedule log np${np} mkdir" PROPERTIES
                       FIXTURES_SETUP log${np}dir FIXTURES_REQUIRED log${np}clean LABELS mpi)
  set_tests_properties("mpi preload: schedule log np${np} run" PROPERTIES
                       FIXTURES_SETUP log${np}run FIXTURES_REQUIRED log${np}dir)
  set_tests_properties("mpi preload: schedule log np${np} check" PROPERTIES FIXTURES_REQUIRED log${np}run LABELS mpi)
endforeach()

# Every registered algorithm, forced in turn, gives right results in the shim. The
# results are checked against values each program computes itself; comparing with
# native MPI as well (busy-polling when oversubscribed) would cost minutes per algorithm.
set(each_args_reduce_matrix --no-pmpi --counts=0,1,7,1000)
set(each_args_bcast_matrix)
set(each_args_reduce_special)
foreach(prog reduce_matrix bcast_matrix reduce_special)
  foreach(np 3 4)
    add_test(NAME "mpi preload each algorithm: ${prog} np${np}"
             COMMAND ${shim_tests}/each_algorithm.sh $<TARGET_FILE:canopy-info> ${MPIEXEC_EXECUTABLE} ${np}
                     -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD} $<TARGET_FILE:${prog}> ${each_args_${prog}})
    set_tests_properties("mpi preload each algorithm: ${prog} np${np}" PROPERTIES
                         ENVIRONMENT "CANOPYTEST_EXPECT_INTERCEPT=1;CANOPY_SEGMENT_BYTES=256" LABELS "mpi;preload"
                         TIMEOUT 900)
  endforeach()
endforeach()

# A bad setting: exactly one line naming the variable, the value and what is
# allowed (from rank 0 only), and native MPI gives right results.
set(expect ${shim_tests}/expect_output.sh)
foreach(setting "CANOPY_REDUCE_ALGO=fastest" "CANOPY_SEGMENT_BYTES=lots" "CANOPY_MODEL=/no/such/model")
  string(REGEX REPLACE "=.*" "" var "${setting}")
  string(REGEX REPLACE ".*=" "" value "${setting}")
  add_test(NAME "mpi preload: bad setting ${var}"
           COMMAND ${expect} 1 1 "${var}='${value}' is not valid.*allowed" --
                   ${MPIEXEC_EXECUTABLE} -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD} -n 3 $<TARGET_FILE:log_calls>)
  set_tests_properties("mpi preload: bad setting ${var}" PROPERTIES ENVIRONMENT "${setting}" LABELS "mpi;preload"
                       TIMEOUT 120)
endforeach()

# Ranks whose settings differ would deadlock: Canopy must notice and stand aside.
add_test(NAME "mpi preload: settings differ between ranks"
         COMMAND ${expect} 1 1 "settings differ between ranks" --
                 ${MPIEXEC_EXECUTABLE} -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD}
                 -n 1 env CANOPY_SEGMENT_BYTES=64 $<TARGET_FILE:log_calls> :
                 -n 2 $<TARGET_FILE:log_calls>)
set_tests_properties("mpi preload: settings differ between ranks" PROPERTIES LABELS "mpi;preload" TIMEOUT 120)

# Fortran calls reach Canopy (MPICH's Fortran bindings call the C MPI_Reduce and
# MPI_Bcast): with info logging, rank 0 announces the schedules it made for them.
if(TARGET reduce_fortran)
  add_test(NAME "mpi preload: fortran calls are intercepted"
           COMMAND ${expect} 2 1000 "new schedule: (reduce|bcast)" --
                   ${MPIEXEC_EXECUTABLE} -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD} -n 3 $<TARGET_FILE:reduce_fortran>)
  set_tests_properties("mpi preload: fortran calls are intercepted" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=info" LABELS "mpi;preload" TIMEOUT 120)
endif()

# The demo of the README runs and its results check out, natively and with Canopy.
add_test(NAME "mpi preload: demo" COMMAND ${expect} 1 1 "^CHECK OK" --
         ${MPIEXEC_EXECUTABLE} -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD} -n 4 $<TARGET_FILE:canopy-demo> --seconds 0.05)
set_tests_properties("mpi preload: demo" PROPERTIES LABELS "mpi;preload" TIMEOUT 120)

# A forced algorithm that declines a call (a commutative-only one meeting the
# non-commutative matrix product) hands it to Canopy's best algorithm, not to native
# MPI, and says so once.
add_test(NAME "mpi preload: forced algorithm declines, Canopy's best runs"
         COMMAND ${expect} 1 1 "CANOPY_REDUCE_ALGO=greedy-segmented cannot plan reduce.*model's best algorithm" --
                 ${MPIEXEC_EXECUTABLE} -genv LD_PRELOAD ${CANOPY_TEST_PRELOAD} -n 4 $<TARGET_FILE:reduce_special>)
set_tests_properties("mpi preload: forced algorithm declines, Canopy's best runs" PROPERTIES
                     ENVIRONMENT "CANOPY_REDUCE_ALGO=greedy-segmented;CANOPYTEST_EXPECT_INTERCEPT=1"
                     LABELS "mpi;preload" TIMEOUT 120)
