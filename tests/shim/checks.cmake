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
# Each program at one size (CI time; the differential tests force every algorithm at
# 2 to 6 ranks): 3 ranks, not a power of two, for the matrices, 4 for the special cases.
set(each_args_reduce_matrix --no-pmpi --counts=0,1,7,1000)
set(each_args_bcast_matrix)
set(each_args_reduce_special)
set(each_np_reduce_matrix 3)
set(each_np_bcast_matrix 3)
set(each_np_reduce_special 4)
foreach(prog reduce_matrix bcast_matrix reduce_special)
  foreach(np ${each_np_${prog}})
    add_test(NAME "mpi preload each algorithm: ${prog} np${np}"
             COMMAND ${shim_tests}/each_algorithm.sh $<TARGET_FILE:canopy-info> ${MPIEXEC_EXECUTABLE} ${np}
                     ${CANOPY_MPIEXEC_PRELOAD} $<TARGET_FILE:${prog}> ${each_args_${prog}})
    set_tests_properties("mpi preload each algorithm: ${prog} np${np}" PROPERTIES
                         ENVIRONMENT "CANOPYTEST_EXPECT_INTERCEPT=1;CANOPY_SEGMENT_BYTES=256;CANOPYTEST_ALGORITHMS=^(reduce|bcast) "
                         LABELS "mpi;preload"
                         TIMEOUT 900)
  endforeach()
endforeach()

# Every allreduce algorithm gives bitwise-identical results on all ranks, with sums
# whose rounding depends on the order, NaNs under MAX and MIN, and a non-commutative
# floating-point user op (allreduce_bitwise.c). Forced algorithms only: native MPICH
# 4.0.2 itself gives different bits on different ranks for MPI_MAX with NaNs (its
# recursive doubling computes max(peer, mine) on both sides).
foreach(np 3 4)
  add_test(NAME "mpi preload each algorithm: allreduce_bitwise np${np}"
           COMMAND ${shim_tests}/each_algorithm.sh $<TARGET_FILE:canopy-info> ${MPIEXEC_EXECUTABLE} ${np}
                   ${CANOPY_MPIEXEC_PRELOAD} $<TARGET_FILE:allreduce_bitwise>)
  set_tests_properties("mpi preload each algorithm: allreduce_bitwise np${np}" PROPERTIES
                       ENVIRONMENT "CANOPYTEST_EXPECT_INTERCEPT=1;CANOPYTEST_ALGORITHMS=^allreduce ;CANOPY_SEGMENT_BYTES=4096"
                       LABELS "mpi;preload" TIMEOUT 900)
endforeach()

# A bad setting: exactly one line naming the variable, the value and what is
# allowed (from rank 0 only), and native MPI gives right results.
set(expect ${shim_tests}/expect_output.sh)
foreach(setting "CANOPY_REDUCE_ALGO=fastest" "CANOPY_SEGMENT_BYTES=lots" "CANOPY_MODEL=/no/such/model"
                "CANOPY_RHO=0" "CANOPY_PROBE_BYTES=0" "CANOPY_CMA=maybe")
  string(REGEX REPLACE "=.*" "" var "${setting}")
  string(REGEX REPLACE ".*=" "" value "${setting}")
  add_test(NAME "mpi preload: bad setting ${var}"
           COMMAND ${expect} 1 1 "${var}='${value}' is not valid.*allowed" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:log_calls>)
  set_tests_properties("mpi preload: bad setting ${var}" PROPERTIES ENVIRONMENT "${setting}" LABELS "mpi;preload"
                       TIMEOUT 120)
endforeach()

# Ranks whose settings differ would deadlock: Canopy must notice and stand aside.
# (The preload arguments open each of the two program groups: Open MPI's -x sets a
# variable for its own group only; MPICH accepts -genv twice.)
add_test(NAME "mpi preload: settings differ between ranks"
         COMMAND ${expect} 1 1 "settings differ between ranks" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD}
                 -n 1 env CANOPY_SEGMENT_BYTES=64 $<TARGET_FILE:log_calls> :
                 ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:log_calls>)
set_tests_properties("mpi preload: settings differ between ranks" PROPERTIES LABELS "mpi;preload" TIMEOUT 120)

# Fortran calls reach Canopy (MPICH's Fortran bindings call the C MPI_Reduce and
# MPI_Bcast; with Open MPI, shim/fortran_wrappers.cpp replaces the Fortran entry points):
# with info logging, rank 0 announces the schedules it made for them.
if(TARGET reduce_fortran)
  add_test(NAME "mpi preload: fortran calls are intercepted"
           COMMAND ${expect} 2 1000 "new schedule: (reduce|bcast)" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:reduce_fortran>)
  set_tests_properties("mpi preload: fortran calls are intercepted" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=info" LABELS "mpi;preload" TIMEOUT 120)
endif()

# The demo of the README runs and its results check out, natively and with Canopy.
add_test(NAME "mpi preload: demo" COMMAND ${expect} 1 1 "^CHECK OK" --
         ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 4 $<TARGET_FILE:canopy-demo> --seconds 0.05)
set_tests_properties("mpi preload: demo" PROPERTIES LABELS "mpi;preload" TIMEOUT 120)

# A forced algorithm that declines a call (a commutative-only one meeting the
# non-commutative matrix product) hands it to Canopy's best algorithm, not to native
# MPI, and says so once.
add_test(NAME "mpi preload: forced algorithm declines, Canopy's best runs"
         COMMAND ${expect} 1 1 "CANOPY_REDUCE_ALGO=greedy-segmented cannot plan reduce.*model's best algorithm" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 4 $<TARGET_FILE:reduce_special>)
set_tests_properties("mpi preload: forced algorithm declines, Canopy's best runs" PROPERTIES
                     ENVIRONMENT "CANOPY_REDUCE_ALGO=greedy-segmented;CANOPYTEST_EXPECT_INTERCEPT=1"
                     LABELS "mpi;preload" TIMEOUT 120)

# On an oversubscribed node auto trials the ring's reduce schedules whatever the model's
# ratio between them (shim/plan_cache.cpp: crowded_ring_trial): 8 ranks, an 8 KB reduce,
# shm-flat (priced over twice shm-reduce-scatter-gather, the model's best) made for the
# trials. Skipped on a machine of 8 cores or more (no oversubscription).
add_test(NAME "mpi preload: oversubscribed reduce trials the ring's schedules"
         COMMAND ${expect} 1 1 "new schedule: reduce of 8192 B over 8 ranks, root 0: shm-flat" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 8 $<TARGET_FILE:canopy-bench>
                 --from-first 8 --sizes 8192 --collectives reduce)
set_tests_properties("mpi preload: oversubscribed reduce trials the ring's schedules" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=info;EXPECT_SKIP_UNLESS=oversubscribed: native MPI does not compete"
                     SKIP_RETURN_CODE 77 LABELS "mpi;preload" TIMEOUT 120)

# CANOPY_CONFIG, CANOPY_REPORT and CANOPY_TIMING: log_calls on 3 ranks with a settings
# file whose rule forces the 4000 B reduce to `chain` and whose setting sends
# broadcasts to native MPI; the report (JSON, then text) and the timing lines of the
# schedule log must count exactly the calls log_calls made, and say what ran.
add_executable(check_report ${shim_tests}/check_report.cpp)
target_link_libraries(check_report PRIVATE nlohmann_json::nlohmann_json)
foreach(format json text)
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/report-${format})
  set(prefix "mpi preload: report ${format}")
  add_test(NAME "${prefix} clean" COMMAND ${CMAKE_COMMAND} -E rm -rf ${dir})
  add_test(NAME "${prefix} mkdir" COMMAND ${CMAKE_COMMAND} -E make_directory ${dir})
  canopy_add_mpi_test(NAME "${prefix} run" TARGET log_calls NP 3 PRELOAD
                      ENV CANOPY_CONFIG=${shim_tests}/report_config.json CANOPY_REPORT=${dir}/report
                          CANOPY_REPORT_FORMAT=${format} CANOPY_TIMING=1 CANOPY_SCHEDULE_LOG=${dir}/rank-%r.jsonl
                          CANOPYTEST_EXPECT_INTERCEPT=0)
  if(format STREQUAL json)
    add_test(NAME "${prefix} check" COMMAND check_report json 3 ${dir}/report ${dir}/rank-0.jsonl
                                            ${dir}/rank-1.jsonl ${dir}/rank-2.jsonl)
  else()
    add_test(NAME "${prefix} check" COMMAND check_report text 3 ${dir}/report)
  endif()
  set_tests_properties("${prefix} clean" PROPERTIES FIXTURES_SETUP report${format}clean LABELS mpi)
  set_tests_properties("${prefix} mkdir" PROPERTIES FIXTURES_SETUP report${format}dir
                       FIXTURES_REQUIRED report${format}clean LABELS mpi)
  set_tests_properties("${prefix} run" PROPERTIES FIXTURES_SETUP report${format}run FIXTURES_REQUIRED report${format}dir)
  set_tests_properties("${prefix} check" PROPERTIES FIXTURES_REQUIRED report${format}run LABELS mpi)
endforeach()

# CANOPY_REPORT=1 (as a user switching it on would write): the report on standard
# error, no file named "1"; CANOPY_REPORT=off: none.
canopy_add_mpi_test(NAME "mpi preload: report on standard error for CANOPY_REPORT=1" TARGET log_calls NP 2 PRELOAD
                    ENV CANOPY_REPORT=1 CANOPYTEST_EXPECT_INTERCEPT=0
                    PASS_REGULAR_EXPRESSION "Canopy [0-9.]+ report: 2 ranks on 1 node")
canopy_add_mpi_test(NAME "mpi preload: no report for CANOPY_REPORT=off" TARGET log_calls NP 2 PRELOAD
                    ENV CANOPY_REPORT=off CANOPYTEST_EXPECT_INTERCEPT=0)
set_tests_properties("mpi preload: no report for CANOPY_REPORT=off" PROPERTIES FAIL_REGULAR_EXPRESSION "report: 2 ranks")

# A bad rule in the settings file: one line naming the file, the rule, the value and
# what is allowed; the rest of the file applies and results are right.
add_test(NAME "mpi preload: bad rule in CANOPY_CONFIG"
         COMMAND ${expect} 1 1 "CANOPY_CONFIG='.*bad_rule_config.json': rules\\[0\\] algorithm=\"fastest\" is not valid \\(allowed: native, auto" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:log_calls>)
set_tests_properties("mpi preload: bad rule in CANOPY_CONFIG" PROPERTIES
                     ENVIRONMENT "CANOPY_CONFIG=${shim_tests}/bad_rule_config.json" LABELS "mpi;preload" TIMEOUT 120)
# ---- robustness: fallback reasons, fault injection, threads, CANOPY_VERIFY, memory ----
foreach(prog fallbacks threads mismatch soak varying_counts native_shortcut ring_reuse cheap_after_ring root_classes)
  add_executable(${prog} ${shim_tests}/${prog}.c ${shim_tests}/canopy_check.h)
  set_target_properties(${prog} PROPERTIES C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_definitions(${prog} PRIVATE _GNU_SOURCE)
  target_compile_options(${prog} PRIVATE $<$<C_COMPILER_ID:GNU,Clang>:-Wall -Wextra>)
  target_link_libraries(${prog} PRIVATE MPI::MPI_C ${CMAKE_DL_LIBS})
endforeach()
find_package(Threads REQUIRED)
target_link_libraries(threads PRIVATE Threads::Threads)

# Canopy's reduction loops against this MPI's MPI_Reduce_local, bit for bit (built from
# the shim's source with its -O3, so the loops tested are the loops shipped).
add_executable(reduce_kernels_check ${shim_tests}/reduce_kernels_check.cpp ${PROJECT_SOURCE_DIR}/shim/reduce_kernels.cpp)
target_include_directories(reduce_kernels_check PRIVATE ${PROJECT_SOURCE_DIR})
set_source_files_properties(${PROJECT_SOURCE_DIR}/shim/reduce_kernels.cpp TARGET_DIRECTORY reduce_kernels_check
                            PROPERTIES COMPILE_OPTIONS "-O3;$<$<CXX_COMPILER_ID:GNU>:-Wno-psabi>")
target_link_libraries(reduce_kernels_check PRIVATE MPI::MPI_C)
canopy_add_mpi_test(NAME "mpi native: reduce kernels equal MPI_Reduce_local" TARGET reduce_kernels_check NP 1
                    PASS_REGULAR_EXPRESSION "[0-9]+ pairs checked, 0 failures")

# Past 1 MiB the root writes its receive buffer with non-temporal stores (shim/executor.cpp,
# kOnePassMaxBytes): every type and operation of reduce_matrix at a count that is past
# 1 MiB from 4-byte types up, at both roots, through the two shared-memory reductions
# (3 s each here). Its in-place cases take the other path (the root's buffer already
# holds its operand: combined into, not streamed) and check that it still holds.
if(TARGET canopy)
  foreach(algo shm-flat shm-reduce-scatter-gather)
    canopy_add_mpi_test(NAME "mpi preload: reduce_matrix past 1 MiB, ${algo} np2" TARGET reduce_matrix NP 2 PRELOAD
                        ENV CANOPY_REDUCE_ALGO=${algo} ARGS --no-pmpi --counts=300007)
  endforeach()
endif()

# The node leaders' collectives of CANOPY_TOPOLOGY=auto's probe, point-to-point among
# some ranks (shim/members.h), against the values MPI's own would give: every subset
# size of 5 ranks, in rank order and shuffled, and the whole communicator.
add_executable(members_check ${shim_tests}/members_check.cpp ${PROJECT_SOURCE_DIR}/shim/members.cpp
                             ${PROJECT_SOURCE_DIR}/shim/polite.cpp ${PROJECT_SOURCE_DIR}/shim/platform.cpp)
target_include_directories(members_check PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(members_check PRIVATE MPI::MPI_C)
canopy_add_mpi_test(NAME "mpi native: the probe's leaders' collectives without a communicator np5" TARGET members_check
                    NP 5 PASS_REGULAR_EXPRESSION "11 subsets checked, 0 failures")

# MPICH 4.0.2 crashes on in-place reduces at a non-zero root (pmodels/mpich#6540), and
# every call Canopy hands to native MPI met that crash; there the root now passes a copy
# of its buffer (shim/native_reduce.h). With native forced every reduce takes that path:
# reduce_matrix's in-place cases at non-zero roots (235 at 3 ranks, contiguous types),
# and differential's seed 2, whose in-place cases at non-zero roots include derived
# types with holes (copied by MPI's pack and unpack). Both crashed before.
add_executable(native_reduce_check ${shim_tests}/native_reduce_check.cpp ${PROJECT_SOURCE_DIR}/shim/native_reduce.cpp
                                   ${PROJECT_SOURCE_DIR}/shim/datatype.cpp)
target_include_directories(native_reduce_check PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(native_reduce_check PRIVATE MPI::MPI_C)
canopy_add_mpi_test(NAME "mpi native: which MPIs get the in-place copy" TARGET native_reduce_check NP 1
                    PASS_REGULAR_EXPRESSION "[0-9]+ library versions checked, 0 failures")
if(TARGET canopy)
  canopy_add_mpi_test(NAME "mpi preload: reduce_matrix native forced, in place at non-zero roots np3" TARGET reduce_matrix
                      NP 3 PRELOAD ENV CANOPY_REDUCE_ALGO=native CANOPYTEST_EXPECT_INTERCEPT=0 ARGS --big-inplace=1)
  canopy_add_mpi_test(NAME "mpi preload: differential native forced np3" TARGET differential NP 3 PRELOAD
                      ENV CANOPY_REDUCE_ALGO=native CANOPYTEST_EXPECT_INTERCEPT=0 ARGS --cases=70 --seed=2
                      LABELS differential)
endif()

# Every call Canopy declines gives native MPI's results and is counted under its
# reason (fallbacks --expect reads canopy_fallback_count on every rank); the first
# call of each (collective, reason) is logged once per rank at debug level (6 lines
# at 3 ranks for two collectives), or once at info on rank 0 when the user forced it.
canopy_add_mpi_test(NAME "mpi native: fallbacks np3" TARGET fallbacks NP 3)
# fallback_case(<title> <reason> <min> <max> <expect-list> <env>...)
function(fallback_case title reason min max expect_list)
  add_test(NAME "mpi preload: fallbacks np3 ${title}"
           COMMAND ${expect} ${min} ${max} "MPI_(Reduce|Bcast): native MPI runs: .*\\[${reason}\\]" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:fallbacks>
                   --expect=${expect_list})
  set_tests_properties("mpi preload: fallbacks np3 ${title}" PROPERTIES ENVIRONMENT "${ARGN}" LABELS "mpi;preload"
                       TIMEOUT 120)
endfunction()
fallback_case("declined calls" intercommunicator 6 6
              reduce:intercommunicator,bcast:intercommunicator,reduce:invalid-argument,bcast:invalid-argument,reduce:unsupported-datatype,bcast:unsupported-datatype,reduce:op-query-failed
              CANOPY_LOG_LEVEL=debug)
fallback_case("fault planner-error" planning-error 6 6 reduce:planning-error,bcast:planning-error
              CANOPY_LOG_LEVEL=debug CANOPY_FAULT=planner-error)
fallback_case("fault invalid-schedule" validator-rejected 6 6 reduce:validator-rejected,bcast:validator-rejected
              CANOPY_LOG_LEVEL=debug CANOPY_FAULT=invalid-schedule)
# Views checked by each rank alone (beyond 2^18 steps) and rejected by rank 1 only: the
# ranks agree on native MPI instead of rank 1 planning apart (which hung or aborted).
fallback_case("fault view-rejected-on-rank-1" validator-rejected 6 6 reduce:validator-rejected,bcast:validator-rejected
              CANOPY_LOG_LEVEL=debug CANOPY_FAULT=view-rejected-on-rank-1)
fallback_case("algorithm native" algorithm-native 1 1 reduce:algorithm-native
              CANOPY_LOG_LEVEL=info CANOPY_REDUCE_ALGO=native)
fallback_case("disabled" disabled 2 2 reduce:disabled,bcast:disabled CANOPY_LOG_LEVEL=info CANOPY_ENABLE=0)
# Two ranks on this machine's two cores (native MPI competes): by default auto keeps
# native MPI, with no trial, for calls the model prices under 5 us, and counts them
# (logged once per rank and collective at debug level).
add_test(NAME "mpi preload: fallbacks np2 auto keeps native below the threshold"
         COMMAND ${expect} 4 4 "MPI_(Reduce|Bcast): native MPI runs: .*\\[auto-below-threshold\\]" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:fallbacks>
                 --expect=reduce:auto-below-threshold,bcast:auto-below-threshold)
set_tests_properties("mpi preload: fallbacks np2 auto keeps native below the threshold" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=debug" LABELS "mpi;preload" TIMEOUT 120)
# ... but not where the topology puts the ranks on two nodes: the same calls, priced
# under 5 us over a quick link, are trialled (native MPI first), none kept native untried.
add_test(NAME "mpi preload: fallbacks np2 auto trials cheap calls across nodes"
         COMMAND ${expect} 0 0 "\\[auto-below-threshold\\]" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:fallbacks>
                 --expect=reduce:auto-native-first,bcast:auto-native-first)
set_tests_properties("mpi preload: fallbacks np2 auto trials cheap calls across nodes" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=debug;CANOPY_TOPOLOGY=${shim_tests}/two_nodes_quick.json"
                     LABELS "mpi;preload" TIMEOUT 120)
# The fault tests also print the planner's own warning (once per call kind, rank 0).
add_test(NAME "mpi preload: fallbacks np3 fault planner-error warns"
         COMMAND ${expect} 1 1000 "planning failed \\(injected by CANOPY_FAULT=planner-error\\); native MPI runs" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:fallbacks>)
set_tests_properties("mpi preload: fallbacks np3 fault planner-error warns" PROPERTIES
                     ENVIRONMENT "CANOPY_FAULT=planner-error" LABELS "mpi;preload" TIMEOUT 120)
# A bad setting: the error line, native MPI's results, and the reason counted.
add_test(NAME "mpi preload: fallbacks np3 bad setting"
         COMMAND ${expect} 1 1 "CANOPY_BCAST_ALGO='fastest' is not valid.*allowed" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:fallbacks>
                 --expect=bcast:algorithm-native)
set_tests_properties("mpi preload: fallbacks np3 bad setting" PROPERTIES
                     ENVIRONMENT "CANOPY_BCAST_ALGO=fastest" LABELS "mpi;preload" TIMEOUT 120)

# MPI_THREAD_MULTIPLE: four threads, each on its own communicator, at once.
foreach(np 2 3)
  canopy_add_mpi_test(NAME "mpi native: threads np${np}" TARGET threads NP ${np} TIMEOUT 120)
  canopy_add_mpi_test(NAME "mpi preload: threads np${np}" TARGET threads NP ${np} PRELOAD TIMEOUT 120)
  set_tests_properties("mpi native: threads np${np}" "mpi preload: threads np${np}" PROPERTIES SKIP_RETURN_CODE 77)
endforeach()
# ... with the schedule log and info logging on, which all threads write to.
add_test(NAME "mpi preload: threads np3 logging"
         COMMAND ${expect} 1 1 "^threads: [0-9]+ checks passed" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:threads>)
set_tests_properties("mpi preload: threads np3 logging" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_SCHEDULE_LOG=${CMAKE_CURRENT_BINARY_DIR}/threads-%r.jsonl;CANOPYTEST_EXPECT_INTERCEPT=1"
                     LABELS "mpi;preload" TIMEOUT 120)

# CANOPY_VERIFY=1: ranks that pass different counts or roots all get MPI_ERR_ARG and
# one error line each (3 calls on every rank), instead of hanging (hence the timeout).
# np2 uses the blocking allreduce, np3 (more ranks than the 2 cores CI has) the polite one.
foreach(np 2 3)
  math(EXPR lines "3 * ${np}")
  add_test(NAME "mpi preload: verify catches mismatched arguments np${np}"
           COMMAND ${expect} ${lines} ${lines}
                   "MPI_(Bcast|Reduce) on a communicator of ${np} ranks: the ranks passed different arguments" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n ${np} $<TARGET_FILE:mismatch>)
  set_tests_properties("mpi preload: verify catches mismatched arguments np${np}" PROPERTIES
                       ENVIRONMENT "CANOPY_VERIFY=1" LABELS "mpi;preload" TIMEOUT 60)
endforeach()
# ... and is silent on correct programs, whose results stay right.
# (reduce_matrix without its comparison against native MPI, which is slow at 3 ranks on
# 2 cores and checks nothing about Canopy.)
set(verify_args_reduce_matrix --no-pmpi --counts=0,1,7,1000)
set(verify_args_bcast_matrix)
foreach(prog reduce_matrix bcast_matrix)
  add_test(NAME "mpi preload: verify passes ${prog} np3"
           COMMAND ${expect} 0 0 "passed different arguments|error" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:${prog}>
                   ${verify_args_${prog}})
  set_tests_properties("mpi preload: verify passes ${prog} np3" PROPERTIES
                       ENVIRONMENT "CANOPY_VERIFY=1;CANOPYTEST_EXPECT_INTERCEPT=1" LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# Endurance (issue 14): 100,000 collectives over 10,000 counts, 10,000 communicators
# created, used and freed out of order: RSS growth after the warm-up under 10 MiB, freed
# communicators release Canopy's state; the numbers in the last line (soak.c).
canopy_add_mpi_test(NAME "mpi native: soak np2" TARGET soak NP 2 TIMEOUT 300)
canopy_add_mpi_test(NAME "mpi preload: soak np2" TARGET soak NP 2 PRELOAD TIMEOUT 300)
# auto's defaults on two ranks: small calls stay native below the threshold and repeat
# through the shortcut past Canopy's lookups, while side communicators are freed and
# replaced under it (their handles reused), and other calls evict nothing they point to.
canopy_add_mpi_test(NAME "mpi native: native shortcut np2" TARGET native_shortcut NP 2)
canopy_add_mpi_test(NAME "mpi preload: native shortcut np2" TARGET native_shortcut NP 2 PRELOAD
                    ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPYTEST_EXPECT_INTERCEPT=0)
# The same at alternating roots, over more communicators and roots than the shortcuts
# hold, and with rank 0 alone calling on communicators of its own, so its shortcuts
# differ from rank 1's when a large call makes the ring halfway.
canopy_add_mpi_test(NAME "mpi native: native shortcuts, rotating roots np2" TARGET native_shortcut NP 2 ARGS --rotate)
canopy_add_mpi_test(NAME "mpi preload: native shortcuts, rotating roots np2" TARGET native_shortcut NP 2 PRELOAD
                    ARGS --rotate ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPYTEST_EXPECT_INTERCEPT=0)
# ... allreduces until the communicator has a staging ring and native MPI has run them
# 256 times (its first calls of a size are slow): then they are trialled like any other
# call; reduces and bcasts stay native (CommState::ring_trials_cheap says why).
# --calls small trios, a 1 MiB one that makes the ring, --calls small ones again: with
# 300 the allreduces are trialled at once after the ring, with 200 after 56 more calls.
# (CANOPY_AUTO_NATIVE_FIRST=0: one 1 MiB call of each would otherwise run natively, as
# native MPI's first call of a size, and make no ring.)
canopy_add_mpi_test(NAME "mpi native: cheap calls after the ring np2" TARGET cheap_after_ring NP 2)
canopy_add_mpi_test(NAME "mpi preload: cheap calls after the ring np2" TARGET cheap_after_ring NP 2 PRELOAD
                    ARGS --calls=300 ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPY_AUTO_NATIVE_FIRST=0
                    PASS_REGULAR_EXPRESSION "before the ring: 300 reduces, 300 bcasts, 300 allreduces. after: 300 reduces, 300 bcasts, 0 allreduces")
canopy_add_mpi_test(NAME "mpi preload: cheap calls after the ring, native warming np2" TARGET cheap_after_ring NP 2
                    PRELOAD ARGS --calls=200 ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPY_AUTO_NATIVE_FIRST=0
                    PASS_REGULAR_EXPRESSION "before the ring: 200 reduces, 200 bcasts, 200 allreduces. after: 200 reduces, 200 bcasts, 56 allreduces")
# On MPI_COMM_WORLD, whose ring exists from MPI_Init, a cheap allreduce's ring schedules
# are planned at its first call and native MPI runs at least its first 256 calls before
# the trials (no second planning at call 256); the program checks the counts. 8400
# allreduces: priced under 2 us, they are trialled once native's calls have cost 8 times
# the trials' price (about 1 ms here), which the agreement at call 8192 sees wherever a
# call takes 0.12 us or more on the slowest rank (the check that a schedule ran).
canopy_add_mpi_test(NAME "mpi preload: cheap allreduces on MPI_COMM_WORLD, native first np2" TARGET cheap_after_ring
                    NP 2 PRELOAD ARGS --world --calls=4200 ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPY_AUTO_NATIVE_FIRST=1)
# A cheap class the model prices from 2 us (here a model whose copies and combines cost
# 0.1 us a byte: 16 B priced at about 3.7 us through the ring) waits 16 native calls, not
# 256: the ranks first agree on native's time at its 16th call (the debug line says so
# for every agreement), and the trials begin there or at a later agreement.
set(name "mpi preload: cheap allreduces priced from 2 us, 16 native calls first np2")
add_test(NAME "${name}"
         COMMAND bash ${shim_tests}/expect_counts.sh
                 "1=auto: allreduce on 2 ranks, 16..16 B: native MPI's first 16 calls took"
                 "0=auto: allreduce on 2 ranks, 16..16 B: native MPI's first ([0-9]|1[0-5]) calls? took"
                 "1=cheap_after_ring: MPI_COMM_WORLD: of 400 allreduces"
                 -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:cheap_after_ring> --world --calls=200
                 --first=16)
set_tests_properties("${name}" PROPERTIES ENVIRONMENT
                     "CANOPY_LOG_LEVEL=debug;CANOPY_AUTO_NATIVE_BELOW=5e-6;CANOPY_AUTO_NATIVE_FIRST=1;CANOPY_LEARN=0;CANOPY_MODEL=hockney:alpha=2e-6,beta=1e-10,gamma=1e-7,copy=1e-7"
                     LABELS "mpi;preload" TIMEOUT 120)
# Small calls alone: once the allreduces' prices add up to CANOPY_RING_AFTER (here 50 us,
# about 100 calls by the default model), they make the ring themselves and are trialled
# through it at their 256th call (the program checks the counts); with off they stay
# native throughout.
canopy_add_mpi_test(NAME "mpi native: cheap calls alone np2" TARGET cheap_after_ring NP 2 ARGS --alone=made)
canopy_add_mpi_test(NAME "mpi preload: cheap calls alone make the ring np2" TARGET cheap_after_ring NP 2 PRELOAD
                    ARGS --alone=made --calls=400 ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPY_RING_AFTER=5e-5)
canopy_add_mpi_test(NAME "mpi preload: cheap calls alone, CANOPY_RING_AFTER=off np2" TARGET cheap_after_ring NP 2
                    PRELOAD ARGS --alone=off --calls=400 ENV CANOPY_AUTO_NATIVE_BELOW=5e-6 CANOPY_RING_AFTER=off
                    CANOPYTEST_EXPECT_INTERCEPT=0)

# 600 calls of each collective over nearly as many distinct counts (up to 800 KB), at
# rotating roots: right results, and with Canopy a plan per size class (a few dozen
# per collective and root), not per count.
canopy_add_mpi_test(NAME "mpi native: varying counts np3" TARGET varying_counts NP 3)
canopy_add_mpi_test(NAME "mpi preload: varying counts np3" TARGET varying_counts NP 3 PRELOAD
                    PASS_REGULAR_EXPRESSION "made [0-9]+ plans \\(at most [0-9]+ allowed\\) for 1200 calls")
# The same through the staging ring alone: each call's stages start where the last
# call's left off in the ring (shim/staging.h, begin_call), and calls of every size,
# both collectives and every root in turn must still find each other's entries.
# On two ranks every call moves on; on three, calls that fill a quarter to all of the
# ring restart (planner::next_staging_origin).
foreach(np 2 3)
  canopy_add_mpi_test(NAME "mpi preload: varying counts, staged only np${np}" TARGET varying_counts NP ${np} PRELOAD
                      ARGS --calls=300 ENV CANOPY_REDUCE_ALGO=shm-reduce-scatter-gather CANOPY_BCAST_ALGO=shm-bcast
                      PASS_REGULAR_EXPRESSION "made [0-9]+ plans \\(at most [0-9]+ allowed\\) for 600 calls")
endforeach()

# With CANOPY_AUTO_NATIVE_FIRST=0, native MPI's trial waits for a size class's 256th call
# (CANOPY_AUTO_NATIVE_AFTER, planner/trials.h): 2 ranks (native competes where a node runs no more ranks than
# cores), 128 KiB reduces and broadcasts. In 200 calls the schedules are trialled and the
# best runs, native MPI runs no call and nothing is decided; in 400 native is measured
# against that schedule (the report counts its trial calls) and each plan decides; with
# CANOPY_AUTO_NATIVE_AFTER=0 native is trialled beside the schedules within 200 calls.
set(native_after_wait "then native MPI is measured against it")
set(native_after_trial "auto is measuring native MPI")
set(native_after_chose "; chose ")
foreach(case "200;256;2;0;0" "400;256;2;2;2" "200;0;0;2;2")
  list(GET case 0 iters)
  list(GET case 1 after)
  list(GET case 2 waits)
  list(GET case 3 trials)
  list(GET case 4 chose)
  set(name "mpi preload: native's trial after ${after} calls, ${iters} calls np2")
  add_test(NAME "${name}"
           COMMAND bash ${shim_tests}/expect_counts.sh "${waits}=${native_after_wait}" "${trials}=${native_after_trial}"
                   "${chose}=${native_after_chose}"
                   -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=${iters}
                   --bytes=131072)
  set_tests_properties("${name}" PROPERTIES ENVIRONMENT
                       "CANOPY_LOG_LEVEL=info;CANOPY_REPORT=-;CANOPY_AUTO_NATIVE_AFTER=${after};CANOPY_AUTO_NATIVE_FIRST=0"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# By default native MPI runs a size class's first calls, and the trials begin once those
# have cost what the trials are priced at (CANOPY_AUTO_NATIVE_FIRST, planner/trials.h):
# 2 ranks, 400 calls of a 128 KiB reduce and broadcast. Rank 0 says when each class's
# trials begin and what they chose; the report counts native's first calls apart (and
# those of timing_loop's few cheap allreduces on MPI_COMM_WORLD, whose ring schedules
# wait for native's 256 first calls: not counted here).
set(name "mpi preload: native MPI first, until its calls pay for the trials np2")
add_test(NAME "${name}"
         COMMAND bash ${shim_tests}/expect_counts.sh
                 "2=info: auto: (reduce|bcast) on 2 ranks.*: native MPI's first (call|[0-9]+ calls) took .* the trials begin"
                 "2=info: auto: (reduce|bcast) on 2 ranks.*measured per call .*native .*. chose "
                 "2=^ +(reduce|bcast) +[0-9]+ calls: auto-native-first" "1=timing_loop: 3 checks passed"
                 -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=400
                 --bytes=131072)
set_tests_properties("${name}" PROPERTIES ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_REPORT=-;CANOPY_AUTO_NATIVE_FIRST=1"
                     LABELS "mpi;preload" TIMEOUT 120)

# auto checks a decision again (CANOPY_AUTO_RECHECK, planner/trials.h): 2 ranks, 128 KiB
# reduces and broadcasts, native's trial from the first call, 8000 calls of each. With
# the largest share the first recheck comes 1024 calls after the decision, or later
# where its price (the rival's measured time) is high: a loaded machine once measured
# native's reduce at 21 ms against the ring's 61 us, which puts the reduce's recheck past
# 4000 calls, so the count is of both collectives together (each recheck doubles the
# wait: at most three each). Whichever wins, the results are right. With 0, none comes.
# Without the ring (CANOPY_SHM=off) native MPI often wins against the point-to-point
# schedules, and its calls then reach the recheck through the native shortcut.
foreach(case "0.5;1-6;auto" "0;0;auto" "0.5;1-6;off")
  list(GET case 0 share)
  list(GET case 1 lines)
  list(GET case 2 shm)
  set(name "mpi preload: auto rechecks its decision, CANOPY_AUTO_RECHECK=${share} CANOPY_SHM=${shm} np2")
  add_test(NAME "${name}"
           COMMAND bash ${shim_tests}/expect_counts.sh
                   "${lines}=info: auto: (reduce|bcast) on 2 ranks.*: recheck [0-9]+ \\(CANOPY_AUTO_RECHECK\\): measured"
                   "1=timing_loop: 3 checks passed"
                   -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=8000
                   --bytes=131072)
  set_tests_properties("${name}" PROPERTIES ENVIRONMENT
                       "CANOPY_LOG_LEVEL=info;CANOPY_AUTO_NATIVE_AFTER=0;CANOPY_AUTO_RECHECK=${share};CANOPY_SHM=${shm}"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# A size class at several roots is priced once (shim/plan_cache.h, ClassChoices): 3 ranks,
# 64 KiB at root 0 until its trials decide, then at roots 1 and 2, which take that
# decision without trials (2 roots x 2 collectives); then 1 MiB at rotating roots from
# the first call, where roots 1 and 2 build the candidates priced at root 0 (4 more).
canopy_add_mpi_test(NAME "mpi native: root classes np3" TARGET root_classes NP 3)
add_test(NAME "mpi preload: root classes np3"
         COMMAND bash ${shim_tests}/expect_counts.sh "4=as the trials at root 0 chose for this size class"
                 "4=the candidates priced at root 0"
                 -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:root_classes>)
# CANOPY_LEARN=0: a model learnt from the 64 KiB calls may price 1 MiB shm-bcast more
# than 2x under every other schedule, and a plan of one candidate has no trials to share.
set_tests_properties("mpi preload: root classes np3" PROPERTIES ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_LEARN=0"
                     LABELS "mpi;preload" TIMEOUT 120)

# ---- CANOPY_TOPOLOGY: a topology file, and what discovery logs -----------------------
# three_sites.json: 5 ranks as 3 sites on 3 nodes (0,1 | 2,3 | 4), slow links between
# the sites and rank 2 sending at half speed; three_sites_np4.json: 4 ranks (0,1 | 2 | 3)
# whose s1-s2 link is left out, so Canopy measures it at MPI_Init. Both claim nodes this
# machine does not have: the planner then prices messages between the "sites" by the
# file's links, and the topology-aware algorithms plan across them. (Discovery on
# several real nodes runs in the test bed: tools/testbed, "testbed: ..." tests.)
set(sites5 ${shim_tests}/three_sites.json)
# Their differential registrations run 60, 40 or 25 cases at CANOPY_DIFFERENTIAL_CASES'
# default of 70, and proportionally fewer where it is lowered (tools/test-sanitizers.sh:
# 12). Sanitized, planning a new size class over the three sites' links took up to 5 s
# (the simulations behind auto's choice allocate per port and step; 0.1 s unsanitized):
# the reduce-scatter-gather-wide registration took 23 s of CI's sanitized stage at a
# fixed 40 cases, 3 s in the plain build.
function(canopy_topology_cases out full)
  math(EXPR n "(${full} * ${CANOPY_DIFFERENTIAL_CASES} + 69) / 70")
  set(${out} ${n} PARENT_SCOPE)
endfunction()
canopy_topology_cases(cases60 60)
canopy_topology_cases(cases40 40)
canopy_topology_cases(cases25 25)
set(sites4 ${shim_tests}/three_sites_np4.json)
canopy_add_mpi_test(NAME "mpi preload: topology file reduce_matrix np5" TARGET reduce_matrix NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5} ARGS --no-pmpi --counts=0,1,7,1000)
canopy_add_mpi_test(NAME "mpi preload: topology file bcast_matrix np5" TARGET bcast_matrix NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5})
canopy_add_mpi_test(NAME "mpi preload: topology file differential np4" TARGET differential NP 4 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites4} ARGS --cases=${cases60} --seed=4242 LABELS differential)
canopy_add_mpi_test(NAME "mpi preload: topology file differential np5 seg 1000" TARGET differential NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5} CANOPY_SEGMENT_BYTES=1000 ARGS --cases=${cases40} --seed=4343
                    LABELS differential)
# Every topology-aware algorithm forced in turn (the list from canopy-info, filtered by
# name: snf, hierarchical, hierarchical-leaders, grid-*), on the programs that check
# results themselves; the allreduces at 5 ranks, where two sites hold two ranks each (the
# leaders' allreduce between three leaders, each pair's level through its node's ring).
set(topology_algos "(snf|hierarchical|hierarchical-leaders|grid-[a-z-]+)")
foreach(case "reduce_matrix;5;${sites5};^reduce ${topology_algos}$;--no-pmpi;--counts=0,1,7,1000"
             "bcast_matrix;5;${sites5};^bcast ${topology_algos}$"
             "differential;4;${sites4};^(reduce|bcast) ${topology_algos}$;--cases=${cases25};--seed=4444"
             "differential;5;${sites5};^allreduce ${topology_algos}$;--cases=${cases25};--seed=4545;--only=allreduce")
  list(POP_FRONT case prog np file filter)
  set(name "mpi preload: topology file each topology-aware algorithm: ${prog} np${np}")
  add_test(NAME "${name}"
           COMMAND ${shim_tests}/each_algorithm.sh $<TARGET_FILE:canopy-info> ${MPIEXEC_EXECUTABLE} ${np}
                   ${CANOPY_MPIEXEC_PRELOAD} $<TARGET_FILE:${prog}> ${case})
  set_tests_properties("${name}" PROPERTIES
                       ENVIRONMENT "CANOPYTEST_EXPECT_INTERCEPT=1;CANOPY_TOPOLOGY=${file};CANOPYTEST_ALGORITHMS=${filter}"
                       LABELS "mpi;preload" TIMEOUT 300)
endforeach()
# reduce-scatter-gather-wide plans only where links between sites keep their latency in
# flight (three_sites_port.json: three_sites.json with port= on those links): forced
# there, it runs (every operand in a slot of its own) and gives native MPI's results,
# non-commutative operations included (rank-ordered); three_sites.json itself has no
# port= (the "each algorithm" runs above, which force every reduce, see it decline).
set(sites5port ${shim_tests}/three_sites_port.json)
canopy_add_mpi_test(NAME "mpi preload: topology file with port= reduce_matrix reduce-scatter-gather-wide np5"
                    TARGET reduce_matrix NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_REDUCE_ALGO=reduce-scatter-gather-wide
                        CANOPYTEST_EXPECT_INTERCEPT=1
                    ARGS --no-pmpi --counts=0,1,7,1000)
canopy_add_mpi_test(NAME "mpi preload: topology file with port= differential reduce-scatter-gather-wide np5"
                    TARGET differential NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_REDUCE_ALGO=reduce-scatter-gather-wide
                    ARGS --cases=${cases40} --seed=4747 LABELS differential)
# scatter-allgather-wide likewise (a block a rank, every message in flight at once):
# forced there it runs and every rank gets the root's bytes.
canopy_add_mpi_test(NAME "mpi preload: topology file with port= bcast_matrix scatter-allgather-wide np5"
                    TARGET bcast_matrix NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_BCAST_ALGO=scatter-allgather-wide
                        CANOPYTEST_EXPECT_INTERCEPT=1)
canopy_add_mpi_test(NAME "mpi preload: topology file with port= differential scatter-allgather-wide np5"
                    TARGET differential NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_BCAST_ALGO=scatter-allgather-wide
                    ARGS --cases=${cases40} --seed=4848 --only=bcast LABELS differential)
# reduce-scatter-allgather-wide likewise: native MPI's results, the same bits on every
# rank (sums whose rounding depends on the order, a non-commutative user op).
canopy_add_mpi_test(NAME "mpi preload: topology file with port= allreduce_bitwise reduce-scatter-allgather-wide np5"
                    TARGET allreduce_bitwise NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_ALLREDUCE_ALGO=reduce-scatter-allgather-wide
                        CANOPYTEST_EXPECT_INTERCEPT=1 CANOPY_SEGMENT_BYTES=4096)
canopy_add_mpi_test(NAME "mpi preload: topology file with port= differential reduce-scatter-allgather-wide np5"
                    TARGET differential NP 5 PRELOAD
                    ENV CANOPY_TOPOLOGY=${sites5port} CANOPY_ALLREDUCE_ALGO=reduce-scatter-allgather-wide
                    ARGS --cases=${cases40} --seed=4949 --only=allreduce LABELS differential)
# With info logging rank 0 says once what it found (3 clusters, and for the 4-rank file
# the link it measured), and auto plans with it.
# (The patterns use "." for the log's semicolons, which CMake lists would split at.)
foreach(case "5;${sites5};topology: 5 ranks on 3 nodes in 3 clusters: s0 = ranks 0-1. s1 = ranks 2-3. s2 = ranks 4. .* no link measured. .*discovery took"
             "4;${sites4};topology: 4 ranks on 3 nodes in 3 clusters: .* measured links s1-s2 \\(ranks 2-3\\). .*discovery took")
  list(POP_FRONT case np file regex)
  add_test(NAME "mpi preload: topology file logged np${np}"
           COMMAND ${expect} 1 1 "^canopy\\[0\\] info: ${regex}" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n ${np} $<TARGET_FILE:log_calls>)
  set_tests_properties("mpi preload: topology file logged np${np}" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_TOPOLOGY=${file}" LABELS "mpi;preload" TIMEOUT 120)
endforeach()
add_test(NAME "mpi preload: topology file used by auto np5"
         COMMAND ${expect} 1 1000 "new schedule: .*: (snf|hierarchical|grid-[a-z-]+)," --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 5 $<TARGET_FILE:log_calls>)
set_tests_properties("mpi preload: topology file used by auto np5" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_TOPOLOGY=${sites5}" LABELS "mpi;preload" TIMEOUT 120)
# A file that cannot be used (missing; describing 5 ranks for 3): exactly one error
# line naming CANOPY_TOPOLOGY, the path and the reason; both collectives then run
# natively (counted as algorithm-native) with right results.
foreach(case "missing;${shim_tests}/no_such_topology.json;cannot read topology file"
             "wrong size;${sites5};it describes 5 ranks and MPI_COMM_WORLD has 3")
  list(POP_FRONT case title file reason)
  add_test(NAME "mpi preload: topology file bad ${title}"
           COMMAND ${expect} 1 1 "CANOPY_TOPOLOGY='${file}' is not valid: .*${reason}.*native MPI_Reduce and MPI_Bcast run" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:fallbacks>
                   --expect=reduce:algorithm-native,bcast:algorithm-native)
  set_tests_properties("mpi preload: topology file bad ${title}" PROPERTIES ENVIRONMENT "CANOPY_TOPOLOGY=${file}"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()
# auto on one node: nothing to discover, nothing logged about a topology.
add_test(NAME "mpi preload: topology auto on one node logs none"
         COMMAND ${expect} 0 0 "topology" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:log_calls>)
set_tests_properties("mpi preload: topology auto on one node logs none" PROPERTIES
                     ENVIRONMENT "CANOPY_LOG_LEVEL=info;CANOPY_TOPOLOGY=auto" LABELS "mpi;preload" TIMEOUT 120)

# The staged algorithms forced, and Canopy required to take the calls.
set(staged_env "CANOPY_REDUCE_ALGO=shm-reduce-scatter-gather;CANOPY_BCAST_ALGO=shm-bcast;CANOPYTEST_EXPECT_INTERCEPT=1")

# The staging ring cannot be made (forced with CANOPY_FAULT=shm-unavailable): with
# CANOPY_SHM=window or posix rank 0 says so once per communicator, naming what failed,
# the call that found out runs native MPI, later ones are planned without the ring, and
# every result is right.
foreach(case "window|MPI_Win_allocate_shared refused" "posix|shm_open refused")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 memory)
  list(GET parts 1 failed)
  set(name "mpi preload: staging ring unavailable (${memory}), calls fall back")
  add_test(NAME "${name}"
           COMMAND ${expect} 1 8 "CANOPY_SHM=${memory}: the node's staging ring .* cannot be made \\(${failed} \\(CANOPY_FAULT\\)\\)" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:reduce_matrix>)
  set_tests_properties("${name}" PROPERTIES
                       ENVIRONMENT "CANOPY_SHM=${memory};CANOPY_FAULT=shm-unavailable;${staged_env}"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# Cross-memory attach refused (forced with CANOPY_FAULT=cma-unavailable, as a kernel
# with kernel.yama.ptrace_scope=1 refuses it): with CANOPY_CMA=on rank 0 says so once
# per communicator, naming the reason; the forced cma-bcast then cannot plan (one line),
# the ring's other schedules or native MPI run, and every result is right. With
# CANOPY_CMA=off no probe runs and nothing is said of it.
add_test(NAME "mpi preload: cross-memory attach unavailable, broadcasts fall back"
         COMMAND ${expect} 1 4 "CANOPY_CMA=on: cross-memory attach between the 3 ranks .* does not work \\(process_vm_readv refused \\(CANOPY_FAULT=cma-unavailable\\)\\)" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:bcast_matrix>)
set_tests_properties("mpi preload: cross-memory attach unavailable, broadcasts fall back" PROPERTIES
                     ENVIRONMENT "CANOPY_CMA=on;CANOPY_FAULT=cma-unavailable;CANOPY_BCAST_ALGO=cma-bcast"
                     LABELS "mpi;preload" TIMEOUT 120)
add_test(NAME "mpi preload: CANOPY_CMA=off, the forced cma-bcast cannot plan"
         COMMAND ${expect} 1 1 "CANOPY_BCAST_ALGO=cma-bcast cannot plan bcast on 3 ranks .*CANOPY_CMA not off" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:bcast_matrix>)
set_tests_properties("mpi preload: CANOPY_CMA=off, the forced cma-bcast cannot plan" PROPERTIES
                     ENVIRONMENT "CANOPY_CMA=off;CANOPY_BCAST_ALGO=cma-bcast;EXPECT_OUTPUT_ABSENT=cross-memory attach between the .* does not work"
                     LABELS "mpi;preload" TIMEOUT 120)
# auto trials the best direct schedule whatever the model prices it at (CommState::plan:
# its price is learnt from its own trials alone): a model that prices a direct copy at
# ten local ones still puts cma-bcast among the trial candidates of bcast_matrix's
# 100 KB broadcasts, and every result is right.
add_test(NAME "mpi preload: auto trials cma-bcast priced far above the ring"
         COMMAND ${expect} 1 1000 "^canopy\\[0\\] info: new schedule: bcast of [0-9]+ B over 2 ranks, root [0-9]+: cma-bcast," --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:bcast_matrix>)
set_tests_properties("mpi preload: auto trials cma-bcast priced far above the ring" PROPERTIES
                     ENVIRONMENT "CANOPY_MODEL=hockney:alpha=2e-6,beta=1e-10,gamma=1e-10,copy=1e-10,direct=1e-9,duplex=full,overlap=1;CANOPY_LOG_LEVEL=info"
                     LABELS "mpi;preload" TIMEOUT 120)
# CANOPY_MODEL=measure times cross-memory-attach copies between ranks 0 and 1 (one node)
# beside the ping-pong: rank 0's "active:" line shows the model with a direct price of
# its own; with CANOPY_CMA=off none is timed and the starting price stays (no direct=).
# bcast_matrix checks every result planned with the measured model.
foreach(case "auto|copy=[^,]+,direct=[^,]+,direct_fixed=[^,]+,duplex=full" "off|copy=[^,]+,duplex=full")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 cma)
  list(GET parts 1 pattern)
  set(name "mpi preload: CANOPY_MODEL=measure with CANOPY_CMA=${cma}")
  add_test(NAME "${name}"
           COMMAND ${expect} 1 1 "^canopy\\[0\\] info: active: .* model hockney:alpha=[^ ]*${pattern}" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:bcast_matrix>)
  set_tests_properties("${name}" PROPERTIES ENVIRONMENT "CANOPY_MODEL=measure;CANOPY_CMA=${cma};CANOPY_LOG_LEVEL=info"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# Where the ring's memory comes from: auto takes POSIX shared memory and removes its
# name from /dev/shm once every rank has mapped it (posix_segment.sh checks that the
# names the debug lines give are gone after the run); where POSIX memory cannot be made
# (CANOPY_FAULT=shm-posix-unavailable) auto makes the ring from MPI_Win_allocate_shared
# instead, and CANOPY_SHM=window always does. reduce_matrix and bcast_matrix check
# every result through the staged algorithms.
foreach(prog reduce_matrix bcast_matrix)
  add_test(NAME "mpi preload: staging ring in POSIX shared memory, name removed: ${prog} np3"
           COMMAND bash ${shim_tests}/posix_segment.sh
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:${prog}>)
  set_tests_properties("mpi preload: staging ring in POSIX shared memory, name removed: ${prog} np3" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=debug;${staged_env}"
                       LABELS "mpi;preload" TIMEOUT 120)
  foreach(case "auto falls back to the window|CANOPY_FAULT=shm-posix-unavailable" "window|CANOPY_SHM=window")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 title)
    list(GET parts 1 setting)
    set(name "mpi preload: staging ring from MPI_Win_allocate_shared, ${title}: ${prog} np3")
    add_test(NAME "${name}"
             COMMAND ${expect} 1 1 "staging ring made for a communicator of 3 ranks: .*\\(MPI_Win_allocate_shared: " --
                     ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:${prog}>)
    set_tests_properties("${name}" PROPERTIES
                         ENVIRONMENT "CANOPY_LOG_LEVEL=debug;${setting};${staged_env}"
                         LABELS "mpi;preload" TIMEOUT 120)
  endforeach()
endforeach()

# Several nodes named by a topology file: hierarchical's node levels stage through a
# ring on each node (the largest node holds 2 ranks: 8 entries of 128 KiB per rank, the
# ring of a 2-rank node, planner/staged.h), and results stay right (the programs check them).
foreach(case "bcast_matrix;CANOPY_BCAST_ALGO=hierarchical" "reduce_matrix;CANOPY_REDUCE_ALGO=hierarchical")
  list(POP_FRONT case prog algo)
  add_test(NAME "mpi preload: topology file, hierarchical stages inside each node: ${prog} np5"
           COMMAND ${expect} 1 1 "staging ring made for a communicator of 5 ranks: 8 entries of 131072 bytes" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 5 $<TARGET_FILE:${prog}>)
  set_tests_properties("mpi preload: topology file, hierarchical stages inside each node: ${prog} np5" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=debug;CANOPY_TOPOLOGY=${sites5};${algo};CANOPYTEST_EXPECT_INTERCEPT=1"
                       LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# A freed communicator's ring goes to the next communicator over the same processes, in
# the same order, and only where every rank still has it; a communicator of a shape seen
# before copies the plans made then (ring_reuse.c says which calls make and which
# reuse); every result is checked. MPI_Init makes MPI_COMM_WORLD's ring and private
# duplicate besides (shim/runtime.cpp, make_world_ring): one more of each.
set(made "staging ring made for a communicator of")
set(reused "staging ring reused for a communicator of")
set(name "mpi preload: staging ring and plans reused by the next communicator over the same processes np3")
add_test(NAME "${name}"
         COMMAND bash ${shim_tests}/expect_counts.sh "3=${made} 3 ranks" "4=${reused} 3 ranks" "2=${made} 2 ranks"
                 "1=${reused} 2 ranks" "6=new schedule: [a-z]+ of 65536 B over 3 ranks"
                 "38=schedule as planned before for a communicator of this shape"
                 "13=private duplicate made for a communicator of"
                 -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:ring_reuse>)
# (The harness's own MPI_Allreduce on the world stays native: ring_reuse.c counts its calls' rings.)
set_tests_properties("${name}" PROPERTIES ENVIRONMENT "CANOPY_LOG_LEVEL=debug;${staged_env};CANOPY_ALLREDUCE_ALGO=native"
                     LABELS "mpi;preload" TIMEOUT 120)
# Calls that all stay native never make Canopy's private duplicate of their
# communicator (it waits for the first call that sends Canopy's own messages).
set(name "mpi preload: no private duplicate for communicators whose calls stay native np3")
add_test(NAME "${name}"
         COMMAND bash ${shim_tests}/expect_counts.sh "0=private duplicate made" "0=staging ring"
                 -- ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:ring_reuse>)
set_tests_properties("${name}" PROPERTIES ENVIRONMENT
                     "CANOPY_LOG_LEVEL=debug;CANOPY_REDUCE_ALGO=native;CANOPY_BCAST_ALGO=native;CANOPY_ALLREDUCE_ALGO=native;CANOPYTEST_EXPECT_INTERCEPT=0"
                     LABELS "mpi;preload" TIMEOUT 120)

# The ring is made only for a staged schedule: never for point-to-point ones (it is
# collective and holds memory), and once per communicator for staged ones.
# (The test harness's own MPI_Allreduce stays native: CANOPY_ALLREDUCE_ALGO=native.)
foreach(case "p2p|0|0|CANOPY_REDUCE_ALGO=binomial;CANOPY_BCAST_ALGO=chain;CANOPY_ALLREDUCE_ALGO=native"
             "staged|1|8|CANOPY_SHM=auto;CANOPY_REDUCE_ALGO=shm-reduce-scatter-gather;CANOPY_BCAST_ALGO=shm-bcast;CANOPY_ALLREDUCE_ALGO=native")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 name)
  list(GET parts 1 least)
  list(GET parts 2 most)
  list(SUBLIST parts 3 -1 env)
  add_test(NAME "mpi preload: staging ring made only for staged schedules: ${name}"
           COMMAND ${expect} ${least} ${most} "staging ring made for a communicator" --
                   ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 3 $<TARGET_FILE:reduce_matrix>)
  set_tests_properties("mpi preload: staging ring made only for staged schedules: ${name}" PROPERTIES
                       ENVIRONMENT "CANOPY_LOG_LEVEL=debug;${env}" LABELS "mpi;preload" TIMEOUT 120)
endforeach()

# The socket level, found by hwloc at MPI_Init (CANOPY_TOPOLOGY=auto on one node): a
# made-up machine of two packages of one core each (HWLOC_SYNTHETIC; HWLOC_THISSYSTEM=1
# keeps binding real), ranks bound to cores in turn, so ranks 0,2 and 1,3 share a
# package. Rank 0 logs the packages and the measured link between them; hierarchical
# goes by package (no "cannot plan" warning) and the programs check their results. MPICH only: its launcher's
# -bind-to binds more ranks than cores without asking.
if(CANOPY_MPI STREQUAL "mpich")
  foreach(case "bcast_matrix;CANOPY_BCAST_ALGO=hierarchical" "reduce_matrix;CANOPY_REDUCE_ALGO=hierarchical")
    list(POP_FRONT case prog algo)
    set(name "mpi preload: hwloc packages, hierarchical by package: ${prog} np4")
    add_test(NAME "${name}"
             COMMAND ${expect} 1 1 "packages 2, per rank 0 1 0 1, between packages hockney.*between packages measured \\(ranks 0-1, against ranks 0-2 in one" --
                     ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -bind-to core -n 4 $<TARGET_FILE:${prog}>)
    set_tests_properties("${name}" PROPERTIES
                         ENVIRONMENT "HWLOC_SYNTHETIC=package:2 core:1 pu:1;HWLOC_THISSYSTEM=1;EXPECT_OUTPUT_ABSENT=cannot plan;CANOPY_LOG_LEVEL=info;CANOPY_TOPOLOGY=auto;${algo};CANOPYTEST_EXPECT_INTERCEPT=1"
                         LABELS "mpi;preload" TIMEOUT 120)
  endforeach()
endif()

# CANOPY_SAVE_RULES: timing_loop on 2 ranks decides its 128 KiB reduce and broadcast in
# trials (native MPI's trial at once) and saves the decisions; a second run with the file
# as CANOPY_CONFIG runs both from the first call by the saved rules, without trials (its
# report shows one algorithm per collective, the rule's); results checked both times. A
# file that cannot be written: one error line, and the job still ends well.
add_executable(check_saved_rules ${shim_tests}/check_saved_rules.cpp)
target_link_libraries(check_saved_rules PRIVATE canopy_config nlohmann_json::nlohmann_json)
set(dir ${CMAKE_CURRENT_BINARY_DIR}/saved-rules)
set(prefix "mpi preload: saved rules")
add_test(NAME "${prefix} clean" COMMAND ${CMAKE_COMMAND} -E rm -rf ${dir})
add_test(NAME "${prefix} mkdir" COMMAND ${CMAKE_COMMAND} -E make_directory ${dir})
canopy_add_mpi_test(NAME "${prefix} save" TARGET timing_loop NP 2 PRELOAD ARGS --iters=200 --bytes=131072
                    ENV CANOPY_SAVE_RULES=${dir}/rules.json CANOPY_AUTO_NATIVE_AFTER=0 CANOPYTEST_EXPECT_INTERCEPT=0)
add_test(NAME "${prefix} reuse"
         COMMAND ${expect} 0 0 "trial round|measured per call" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=20 --bytes=131072)
set_tests_properties("${prefix} reuse" PROPERTIES ENVIRONMENT
                     "CANOPY_CONFIG=${dir}/rules.json;CANOPY_REPORT=${dir}/report.json;CANOPY_REPORT_FORMAT=json;CANOPY_LOG_LEVEL=debug;CANOPY_AUTO_NATIVE_BELOW=0"
                     LABELS "mpi;preload" TIMEOUT 120)
add_test(NAME "${prefix} check" COMMAND check_saved_rules ${dir}/rules.json ${dir}/report.json 131072 2)
set_tests_properties("${prefix} clean" PROPERTIES FIXTURES_SETUP savedrulesclean LABELS mpi)
set_tests_properties("${prefix} mkdir" PROPERTIES FIXTURES_SETUP savedrulesdir FIXTURES_REQUIRED savedrulesclean LABELS mpi)
set_tests_properties("${prefix} save" PROPERTIES FIXTURES_SETUP savedrulessave FIXTURES_REQUIRED savedrulesdir)
set_tests_properties("${prefix} reuse" PROPERTIES FIXTURES_SETUP savedrulesreuse FIXTURES_REQUIRED savedrulessave)
set_tests_properties("${prefix} check" PROPERTIES FIXTURES_REQUIRED savedrulesreuse LABELS mpi)
add_test(NAME "${prefix}: a file that cannot be written"
         COMMAND ${expect} 1 1 "CANOPY_SAVE_RULES='/nonexistent/canopy/rules.json': cannot open the file for writing; no rules saved" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=20 --bytes=131072)
set_tests_properties("${prefix}: a file that cannot be written" PROPERTIES ENVIRONMENT
                     "CANOPY_SAVE_RULES=/nonexistent/canopy/rules.json;CANOPY_AUTO_NATIVE_AFTER=0;CANOPY_AUTO_NATIVE_BELOW=0"
                     LABELS "mpi;preload" TIMEOUT 120)
# A rule whose algorithm cannot run here (a saved shm-flat where the ring cannot be made,
# as on a job laid out over two nodes): one warning naming the rule, and the model's
# best algorithm runs, with right results.
add_test(NAME "mpi preload: a rule the ring cannot serve"
         COMMAND ${expect} 1 1 "CANOPY_CONFIG rules.0. of .*shm_rule_config.json .algorithm shm-flat. cannot plan reduce on 2 ranks.*model's best algorithm" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 2 $<TARGET_FILE:timing_loop> --iters=20 --bytes=131072)
set_tests_properties("mpi preload: a rule the ring cannot serve" PROPERTIES ENVIRONMENT
                     "CANOPY_CONFIG=${shim_tests}/shm_rule_config.json;CANOPY_SHM=off;CANOPYTEST_EXPECT_INTERCEPT=1"
                     LABELS "mpi;preload" TIMEOUT 120)
# Saved rules over many size classes: varying_counts on 4 ranks (counts drawn over ~50
# classes, rotating roots) saves its decisions; a second run with the file forces them
# class by class. Its own checks: every result right, and plans still per size class
# (the saved rules are whole classes: at most --max-plans, not one plan per count).
set(dir ${CMAKE_CURRENT_BINARY_DIR}/saved-rules-varying)
set(prefix "mpi preload: saved rules, varying counts")
add_test(NAME "${prefix} clean" COMMAND ${CMAKE_COMMAND} -E rm -rf ${dir})
add_test(NAME "${prefix} mkdir" COMMAND ${CMAKE_COMMAND} -E make_directory ${dir})
canopy_add_mpi_test(NAME "${prefix} save np4" TARGET varying_counts NP 4 PRELOAD
                    ENV CANOPY_SAVE_RULES=${dir}/rules.json CANOPYTEST_EXPECT_INTERCEPT=1)
add_test(NAME "${prefix} reuse np4"
         COMMAND ${expect} 1 1 "varying_counts: [0-9]+ checks passed" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 4 $<TARGET_FILE:varying_counts>)
set_tests_properties("${prefix} reuse np4" PROPERTIES ENVIRONMENT
                     "CANOPY_CONFIG=${dir}/rules.json;CANOPY_AUTO_NATIVE_BELOW=0;CANOPYTEST_EXPECT_INTERCEPT=1;EXPECT_OUTPUT_ABSENT=CANOPY_CONFIG='|warning|error"
                     LABELS "mpi;preload" TIMEOUT 120)
set_tests_properties("${prefix} clean" PROPERTIES FIXTURES_SETUP savedvaryingclean LABELS mpi)
set_tests_properties("${prefix} mkdir" PROPERTIES FIXTURES_SETUP savedvaryingdir FIXTURES_REQUIRED savedvaryingclean LABELS mpi)
set_tests_properties("${prefix} save np4" PROPERTIES FIXTURES_SETUP savedvaryingsave FIXTURES_REQUIRED savedvaryingdir)
set_tests_properties("${prefix} reuse np4" PROPERTIES FIXTURES_REQUIRED savedvaryingsave)
# A rule for commutative operations only ("commutative": true, as saved rules write for
# sums): reduce_special's non-commutative reduces do not meet it (no "cannot plan"
# warning, which the same algorithm forced by CANOPY_REDUCE_ALGO gives, above), its
# sums do; every result right.
add_test(NAME "mpi preload: a rule for commutative operations only"
         COMMAND ${expect} 0 0 "cannot plan" --
                 ${MPIEXEC_EXECUTABLE} ${CANOPY_MPIEXEC_PRELOAD} -n 4 $<TARGET_FILE:reduce_special>)
set_tests_properties("mpi preload: a rule for commutative operations only" PROPERTIES ENVIRONMENT
                     "CANOPY_CONFIG=${shim_tests}/commutative_rule_config.json;CANOPYTEST_EXPECT_INTERCEPT=1"
                     LABELS "mpi;preload" TIMEOUT 120)

# CANOPY_TRACE: canopy-bench's calls traced on every rank, and the file checked against
# the trace-event format, the calls and their steps, every message's two ends, and
# causality across the ranks' aligned clocks (check_trace.cpp). Once over point-to-point
# schedules (4 ranks, no staging ring), once through the node's ring (3 ranks).
add_executable(check_trace ${shim_tests}/check_trace.cpp)
target_link_libraries(check_trace PRIVATE nlohmann_json::nlohmann_json)
set(trace_dir ${CMAKE_CURRENT_BINARY_DIR}/trace)
add_test(NAME "mpi preload: trace clean" COMMAND ${CMAKE_COMMAND} -E rm -rf ${trace_dir})
add_test(NAME "mpi preload: trace mkdir" COMMAND ${CMAKE_COMMAND} -E make_directory ${trace_dir})
set_tests_properties("mpi preload: trace clean" PROPERTIES FIXTURES_SETUP traceclean LABELS mpi)
set_tests_properties("mpi preload: trace mkdir" PROPERTIES FIXTURES_SETUP tracedir FIXTURES_REQUIRED traceclean
                     LABELS mpi)
foreach(shape p2p ring)
  if(shape STREQUAL p2p)
    set(np 4)
    set(env CANOPY_SHM=off CANOPY_REDUCE_ALGO=binomial CANOPY_BCAST_ALGO=binomial CANOPY_ALLREDUCE_ALGO=ring
            CANOPY_SCHEDULE_LOG=${trace_dir}/p2p.jsonl)
    set(kinds send receive reduce wait)
  else()
    set(np 3)
    set(env CANOPY_REDUCE_ALGO=shm-reduce-scatter-gather CANOPY_BCAST_ALGO=shm-bcast
            CANOPY_ALLREDUCE_ALGO=shm-reduce-scatter-allgather)
    set(kinds stage fetch wait)
  endif()
  canopy_add_mpi_test(NAME "mpi preload: trace ${shape} run" TARGET canopy-bench NP ${np} PRELOAD
                      ENV ${env} CANOPY_TRACE=${trace_dir}/${shape}.json CANOPY_TRACE_CALLS=2:4
                      ARGS --collectives allreduce,reduce,bcast --sizes 65536 --warmup 2 --min-calls 4 --seconds 0.01
                      PASS_REGULAR_EXPRESSION "CHECK OK")
  add_test(NAME "mpi preload: trace ${shape} check" COMMAND check_trace ${trace_dir}/${shape}.json ${np} ${kinds})
  set_tests_properties("mpi preload: trace ${shape} run" PROPERTIES FIXTURES_SETUP trace${shape}
                       FIXTURES_REQUIRED tracedir)
  set_tests_properties("mpi preload: trace ${shape} check" PROPERTIES FIXTURES_REQUIRED trace${shape} LABELS mpi)
endforeach()
# canopy-view puts a traced call's measured steps beside its logged schedule's prediction.
add_test(NAME "mpi preload: trace p2p measured against predicted"
         COMMAND canopy-view ${trace_dir}/p2p.jsonl --trace ${trace_dir}/p2p.json --svg ${trace_dir}/p2p.svg)
set_tests_properties("mpi preload: trace p2p measured against predicted" PROPERTIES FIXTURES_REQUIRED tracep2p
                     LABELS mpi PASS_REGULAR_EXPRESSION
                     "predicted makespan [^;]+; measured [^(]+[(]4 ranks traced[)].*furthest behind.*rank [0-3] step [0-9]+ [(].*ended .*predicted .*wrote")

# CANOPY_TRACE_FORMAT=otf2 (where libcanopy.so was built with OTF2): archives of a 2- and
# a 4-rank job read back by otf2-print, every step's region entered and left, every send
# matched by its receive (check_otf2.sh).
find_package(PkgConfig QUIET)
pkg_check_modules(CANOPY_TEST_OTF2 QUIET otf2)
find_program(CANOPY_OTF2_PRINT otf2-print)
if(CANOPY_TEST_OTF2_FOUND AND CANOPY_OTF2_PRINT)
  foreach(np 2 4)
    canopy_add_mpi_test(NAME "mpi preload: trace otf2 np${np} run" TARGET canopy-bench NP ${np} PRELOAD
                        ENV CANOPY_SHM=off CANOPY_REDUCE_ALGO=binomial CANOPY_BCAST_ALGO=binomial
                            CANOPY_ALLREDUCE_ALGO=ring CANOPY_TRACE=${trace_dir}/otf2-np${np}
                            CANOPY_TRACE_FORMAT=otf2 CANOPY_TRACE_CALLS=2:4
                        ARGS --collectives allreduce,reduce,bcast --sizes 65536 --warmup 2 --min-calls 4 --seconds 0.01
                        PASS_REGULAR_EXPRESSION "CHECK OK")
    add_test(NAME "mpi preload: trace otf2 np${np} check"
             COMMAND ${shim_tests}/check_otf2.sh ${CANOPY_OTF2_PRINT} ${np} ${trace_dir}/otf2-np${np}/traces.otf2)
    set_tests_properties("mpi preload: trace otf2 np${np} run" PROPERTIES FIXTURES_SETUP traceotf2${np}
                         FIXTURES_REQUIRED tracedir)
    set_tests_properties("mpi preload: trace otf2 np${np} check" PROPERTIES FIXTURES_REQUIRED traceotf2${np} LABELS mpi)
  endforeach()
else()
  message(STATUS "OTF2 or otf2-print not found: the OTF2 trace tests are not run (Debian: libotf2-trace-dev otf2-tools)")
endif()
