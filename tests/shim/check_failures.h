// The C++ checks' one assertion: a failed check prints its line and counts; the program
// prints the count at the end and exits with 1 if any failed.
#pragma once

#include <cstdio>
#include <string>

namespace canopy_test {

inline int failures = 0;

inline void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

}  // namespace canopy_test
