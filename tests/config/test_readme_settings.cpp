#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "config/settings.h"

// The README's settings table is written by hand; this keeps it from drifting away
// from the spec table in the code (which canopy-info prints).
TEST_CASE("settings: README documents every setting with its default", "[config]") {
  std::ifstream in(CANOPY_SOURCE_DIR "/README.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  for (const auto& s : canopy::config::setting_specs()) {
    INFO(s.name);
    const std::string row = "| `" + s.name + "` | `" + s.default_value + "` |";
    const std::string row_no_default = "| `" + s.name + "` | " + s.default_value + " |";
    CHECK((readme.find(row) != std::string::npos || readme.find(row_no_default) != std::string::npos));
  }
}
