// Every fuzz target's seeds (tests/fuzz/corpus/<target>/) and every input that once
// crashed it (tests/fuzz/regressions/<target>/) run through the same function the
// fuzzer calls, in the ordinary unit-test build: a fixed crash stays fixed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/targets.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs(const std::string& kind, const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(CANOPY_SOURCE_DIR) / "tests" / "fuzz" / kind / target;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("fuzz targets: every seed and every past crash runs cleanly", "[fuzz]") {
  for (const auto& t : canopy::fuzz::targets()) {
    const auto seeds = inputs("corpus", t.name);
    DYNAMIC_SECTION(t.name) {
      INFO("tests/fuzz/corpus/" << t.name << " holds no seed");
      CHECK(!seeds.empty());
      for (const auto& kind : {"corpus", "regressions"})
        for (const auto& file : inputs(kind, t.name)) {
          INFO(file.string());
          const std::string bytes = read(file);
          t.run(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
          SUCCEED();
        }
    }
  }
}
