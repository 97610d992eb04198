// libFuzzer's entry points over tests/fuzz/targets.h. One binary holds every target;
// CANOPY_FUZZ_TARGET names the one to run (tools/fuzz.sh sets it):
//   CANOPY_FUZZ_TARGET=schedule canopy-fuzz corpus/ -max_total_time=60
//   CANOPY_FUZZ_TARGET=schedule canopy-fuzz crash-1234        (replays one input)
//   CANOPY_FUZZ_TARGET=list canopy-fuzz                        (prints the names)
#include <cstdio>
#include <cstdlib>

#include "targets.h"

namespace {
const canopy::fuzz::Target* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("CANOPY_FUZZ_TARGET");
  if (name && std::string(name) == "list") {
    for (const auto& t : canopy::fuzz::targets()) std::printf("%s\t%s\n", t.name.c_str(), t.input.c_str());
    std::exit(0);
  }
  target = name ? canopy::fuzz::find_target(name) : nullptr;
  if (!target) {
    std::fprintf(stderr, "canopy-fuzz: set CANOPY_FUZZ_TARGET to one of:");
    for (const auto& t : canopy::fuzz::targets()) std::fprintf(stderr, " %s", t.name.c_str());
    std::fprintf(stderr, " (or list)\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  target->run(data, size);
  return 0;
}
