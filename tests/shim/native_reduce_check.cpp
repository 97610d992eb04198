// native_reduce_check: which MPI libraries Canopy passes a copy to on an in-place reduce
// at a non-zero root (shim/native_reduce.h): MPICH 4.0.0 to 4.1.1, read from
// MPI_Get_library_version's text, and nothing else. One rank; prints what this MPI
// says and the count of checks.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "shim/native_reduce.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  struct Case {
    const char* text;
    bool crashes;
  };
  // Versions from pmodels/mpich#6540 (4.0.2 and 4.1.1 crash; 3.2.1 does not) and its fix,
  // pmodels/mpich#6543, first released in 4.1.2.
  const Case cases[] = {
      {"MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\nMPICH Device:\tch4:ucx", true},
      {"MPICH Version:\t4.0\n", true},
      {"MPICH Version:    4.1.1\n", true},
      {"MPICH Version:\t4.1\n", true},
      {"MPICH Version:\t4.1a1\n", true},
      {"MPICH Version:\t4.1.2\n", false},
      {"MPICH Version:\t4.2.0\n", false},
      {"MPICH Version:\t4.3.0rc1\n", false},
      {"MPICH Version:\t3.4.3\n", false},
      {"MPICH Version:\t3.2.1\n", false},
      {"MPICH Version:\t14.0.2\n", false},
      {"MPICH Version:\t\n", false},
      {"MPICH Version:", false},
      {"", false},
      {"Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022", false},
      {"MVAPICH2 Version      :\t2.3.7\nMVAPICH2 Release date :\tWed March 02 22:00:00 EST 2022", false},
      {"Intel(R) MPI Library 2021.6 for Linux* OS\n", false},
      {"MPI VERSION    : CRAY MPICH version 8.1.25.17 (ANL base 3.4a2)", false},
  };
  int checked = 0, failures = 0;
  for (const Case& c : cases) {
    ++checked;
    if (canopy::shim::in_place_reduce_at_nonzero_root_crashes(c.text) != c.crashes) {
      std::printf("FAIL: \"%s\" should say %s\n", c.text, c.crashes ? "crashes" : "does not crash");
      ++failures;
    }
  }
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(version, &length);
  const std::string first_line = std::string(version, static_cast<std::size_t>(length)).substr(0, std::string(version).find('\n'));
  std::printf("this MPI (%s): %s\n", first_line.c_str(),
              canopy::shim::this_mpi_crashes_on_in_place_reduce_at_nonzero_root() ? "copies" : "no copy");
  std::printf("%d library versions checked, %d failures\n", checked, failures);
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
