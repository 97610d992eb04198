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

// docs/configuration.md holds the full table exactly as canopy-info --markdown prints it.
TEST_CASE("settings: docs/configuration.md holds the table the code prints", "[config]") {
  std::ifstream in(CANOPY_SOURCE_DIR "/docs/configuration.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- settings-table:begin -->\n", end = "<!-- settings-table:end -->";
  const auto from = doc.find(begin), to = doc.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(doc.substr(from + begin.size(), to - from - begin.size()) == canopy::config::settings_markdown());
}
