// CANOPY_CONFIG: an optional JSON settings file. Its top-level keys are the CANOPY_*
// names of the environment (values: strings, integers or booleans), plus "rules", a
// list of per-collective rules. The environment overrides the file. The format is
// documented in docs/configuration.md.
#pragma once

#include <string>
#include <vector>

#include "config/rules.h"

namespace canopy::config {

struct ConfigFile {
  std::vector<std::pair<std::string, std::string>> settings;  // CANOPY_* name, value as text
  std::vector<Rule> rules;  // the valid ones, in file order
  // One line per problem, naming the file, the key or rule, the value and what is
  // allowed. A bad rule is dropped; a bad file (unreadable, not JSON) gives no
  // settings and no rules.
  std::vector<std::string> errors;
};

// Reads and validates the file at `path`.
ConfigFile read_config_file(const std::string& path);

// Validates `text` as the contents of a settings file; `origin` names it in messages.
ConfigFile parse_config_text(const std::string& text, const std::string& origin);

}  // namespace canopy::config
