/* The "was Canopy really there?" check of canopy_check.h, for the Fortran test
 * program (reduce_fortran.f90 calls it through a bind(C) interface): with
 * CANOPYTEST_EXPECT_INTERCEPT=1 every rank must find canopy_intercepted_calls with
 * dlsym and see it return > 0; otherwise nothing is required. Collective over
 * MPI_COMM_WORLD; call it after the collectives under test and before MPI_Finalize.
 * Sets *checks and *failures to this rank's counts (both 0 when nothing is required),
 * for the program to add to its own. */
#include "canopy_check.h"

void canopytest_check_intercept(int *checks, int *failures) {
  ct_init("reduce_fortran", 0);
  ct_check_intercept();
  fflush(stdout); /* before the Fortran runtime's own output */
  *checks = (int)ct.checks;
  *failures = (int)ct.failures;
}
