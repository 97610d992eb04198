#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>

#include "config/settings.h"

namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(CANOPY_SOURCE_DIR "/" + relative);
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const canopy::config::SettingSpec* find_spec(const std::string& name) {
  for (const auto& s : canopy::config::setting_specs())
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace

// The README keeps a short, hand-written table of the settings people change (the full
// one lives in docs/configuration.md, below). Hand-written rows drift: this fails when a
// row names a setting the code no longer has or gives a default the code does not use.
TEST_CASE("settings: the README's short table names real settings with their defaults", "[config]") {
  const std::string readme = read_source_file("README.md");
  std::istringstream lines(readme);
  std::string line;
  int rows = 0;
  const std::regex row(R"(^\| `(CANOPY_[A-Z_]+)` \| `([^`]*)` \|)");
  while (std::getline(lines, line)) {
    if (line.rfind("| `CANOPY_", 0) != 0) continue;
    INFO(line);
    std::smatch m;
    REQUIRE(std::regex_search(line, m, row));
    const auto* spec = find_spec(m[1]);
    REQUIRE(spec != nullptr);
    CHECK(m[2] == spec->default_value);
    ++rows;
  }
  // The table must still be there (a reformatted table would otherwise pass unread).
  CHECK(rows >= 8);
  // The README points to the full reference.
  CHECK(readme.find("(docs/configuration.md)") != std::string::npos);
}

// Every CANOPY_* name in the README's text is a setting the code has (CMake options,
// written -DCANOPY_..., are not settings).
TEST_CASE("settings: the README names no setting the code lacks", "[config]") {
  const std::string readme = read_source_file("README.md");
  const std::regex name(R"(CANOPY_[A-Z_]+)");
  for (auto it = std::sregex_iterator(readme.begin(), readme.end(), name); it != std::sregex_iterator(); ++it) {
    const auto at = static_cast<std::size_t>(it->position());
    if (at >= 2 && readme.compare(at - 2, 2, "-D") == 0) continue;
    INFO(it->str());
    CHECK(find_spec(it->str()) != nullptr);
  }
}

// docs/configuration.md holds the full table exactly as canopy-info --markdown prints it.
TEST_CASE("settings: docs/configuration.md holds the table the code prints", "[config]") {
  const std::string doc = read_source_file("docs/configuration.md");
  const std::string begin = "<!-- settings-table:begin -->\n", end = "<!-- settings-table:end -->";
  const auto from = doc.find(begin), to = doc.find(end);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  CHECK(doc.substr(from + begin.size(), to - from - begin.size()) == canopy::config::settings_markdown());
}
