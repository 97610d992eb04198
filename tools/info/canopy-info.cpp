// canopy-info: what this Canopy build offers: version, algorithms, settings.
#include <CLI/CLI.hpp>

#include <iostream>

#include "config/config_file.h"
#include "config/saved_rules.h"
#include "config/settings.h"
#include "planner/registry.h"
#include "shim/canopy.h"

int main(int argc, char** argv) {
  CLI::App app{"canopy-info: Canopy's version, registered algorithms and CANOPY_* settings"};
  app.footer(
      "\nExamples:\n  canopy-info                  everything\n  canopy-info --list-settings  the settings table only\n"
      "  canopy-info --markdown       the settings table for docs/configuration.md\n"
      "  canopy-info --check-config canopy-rules.json   a settings file (one CANOPY_SAVE_RULES wrote), read as a "
      "job reads it\n\nExit status: 0; 2 where --check-config finds a problem (one line each).\n");
  bool settings_only = false, algorithms_only = false, markdown = false;
  std::string check_config;
  app.add_option("--check-config", check_config,
                 "read a CANOPY_CONFIG settings file as a job would: its settings, its rules in the order they "
                 "are tried, and every problem");
  app.add_flag("--list-settings", settings_only, "print only the CANOPY_* settings table");
  app.add_flag("--list-algorithms", algorithms_only, "print only the registered algorithms");
  app.add_flag("--markdown", markdown, "print the settings table in Markdown (as docs/configuration.md has it)");
  CLI11_PARSE(app, argc, argv);
  if (!check_config.empty()) {
    const canopy::config::ConfigFile file = canopy::config::read_config_file(check_config);
    for (const auto& [name, value] : file.settings) std::cout << "setting " << name << "=" << value << "\n";
    for (std::size_t i = 0; i < file.rules.size(); ++i)
      std::cout << file.rules[i].origin << ": " << canopy::config::describe_rule(file.rules[i]) << "\n";
    std::cout << file.settings.size() << " setting(s), " << file.rules.size() << " rule(s); plans "
              << (canopy::config::rules_keep_size_classes(file.rules)
                      ? "stay per size class"
                      : "are made per exact count (a rule splits a size class or sets a segment size)")
              << "\n";
    for (const std::string& e : file.errors) std::cerr << "canopy-info: " << e << "\n";
    return file.errors.empty() ? 0 : 2;
  }
  if (markdown) {
    std::cout << canopy::config::settings_markdown();
    return 0;
  }
  const bool all = !settings_only && !algorithms_only;
  if (all) std::cout << "Canopy " << CANOPY_VERSION_STRING << "\n\n";
  if (all || algorithms_only) {
    if (all) std::cout << "Algorithms (CANOPY_REDUCE_ALGO / CANOPY_BCAST_ALGO / CANOPY_ALLREDUCE_ALGO values besides native and "
                            "auto):\n";
    for (const auto& a : canopy::planner::algorithms())
      std::cout << "  " << canopy::planner::to_string(a.collective) << " " << a.name << ": " << a.summary << "\n";
    if (all) std::cout << "\n";
  }
  if (all || settings_only) {
    if (all) std::cout << "Settings:\n";
    std::cout << canopy::config::settings_table();
  }
  return 0;
}
