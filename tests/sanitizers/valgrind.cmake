# valgrind memcheck over a short MPI run with libcanopy.so preloaded: every rank runs
# under memcheck, and any memory error, or any block definitely lost, outside what
# valgrind.supp suppresses (MPICH's own) fails the test. Not in sanitizer builds
# (valgrind cannot run ASan code), only when valgrind is installed, and only with MPICH
# (the suppressions are MPICH's; Open MPI's own reports would fail it).
# Included from tests/CMakeLists.txt (it uses canopy_add_mpi_test).
find_program(CANOPY_VALGRIND valgrind)
if(CANOPY_VALGRIND AND NOT CANOPY_SANITIZE AND TARGET canopy AND CANOPY_MPI STREQUAL "mpich")
  set(memcheck ${CANOPY_VALGRIND} --tool=memcheck --error-exitcode=97 --leak-check=full
      --show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30
      --suppressions=${CMAKE_CURRENT_LIST_DIR}/valgrind.supp)
  # timing_loop: reduce and bcast, 2 ranks, one segment and many (CANOPY_SEGMENT_BYTES=1024
  # cuts its 8 KB into 8), 20 calls each (memcheck is some 50 times slower).
  foreach(seg auto 1024)
    add_test(NAME "mpi preload: valgrind memcheck timing_loop np2 seg ${seg}"
             COMMAND ${MPIEXEC_EXECUTABLE} -n 2 ${memcheck} $<TARGET_FILE:timing_loop> --iters=20)
    set_tests_properties("mpi preload: valgrind memcheck timing_loop np2 seg ${seg}" PROPERTIES
                         ENVIRONMENT "LD_PRELOAD=${CANOPY_TEST_PRELOAD};CANOPYTEST_EXPECT_INTERCEPT=1;CANOPY_SEGMENT_BYTES=${seg};CANOPY_AUTO_NATIVE_BELOW=0"
                         LABELS "mpi;preload;valgrind" TIMEOUT 300 PROCESSORS 2)
  endforeach()
endif()
