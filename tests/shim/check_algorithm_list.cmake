# cmake -DINFO=<canopy-info> -DEXPECTED=<collective:name;...> -P check_algorithm_list.cmake
# Fails unless `canopy-info --list-algorithms` lists exactly EXPECTED (the list the
# differential registrations were made from), in order.
execute_process(COMMAND ${INFO} --list-algorithms OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${INFO} --list-algorithms failed (${rc})")
endif()
string(REGEX MATCHALL "(allreduce|reduce|bcast) [a-z0-9-]+:" found "${out}")
list(TRANSFORM found REPLACE "^(allreduce|reduce|bcast) ([a-z0-9-]+):$" "\\1:\\2")
if(NOT "${found}" STREQUAL "${EXPECTED}")
  message(FATAL_ERROR "canopy-info lists ${found}\nbut the differential tests were registered for ${EXPECTED}\n"
                      "(re-run cmake so tests/shim/CMakeLists.txt reads planner/registry.cpp again)")
endif()
list(LENGTH found n)
message(STATUS "differential: ${n} algorithms, as registered")
