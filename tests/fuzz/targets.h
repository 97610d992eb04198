// Fuzz targets: each is one function from bytes to nothing that must neither crash,
// nor leak, nor throw, nor break a stated invariant (it aborts with a message then),
// whatever the bytes are. The same functions run under libFuzzer (tests/fuzz/fuzz_main.cpp,
// built with clang by tools/fuzz.sh) and in the unit tests, which feed them every
// committed seed and every input that once crashed (tests/fuzz/test_fuzz_inputs.cpp).
//
// Adding a target: write its function in targets.cpp and add one row to targets();
// tools/fuzz.sh and the unit tests find it there, and its seeds in corpus/<name>/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace canopy::fuzz {

struct Target {
  std::string name;  // the folder name under tests/fuzz/corpus and tests/fuzz/regressions
  void (*run)(const std::uint8_t* data, std::size_t size);
  std::string input;  // how the bytes are read, for --help and the seed authors
};

const std::vector<Target>& targets();
const Target* find_target(const std::string& name);

}  // namespace canopy::fuzz
