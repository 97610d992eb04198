// canopy-info: what this Canopy build offers: version, algorithms, settings.
#include <CLI/CLI.hpp>

#include <iostream>

#include "config/settings.h"
#include "planner/registry.h"
#include "shim/canopy.h"

int main(int argc, char** argv) {
  CLI::App app{"canopy-info: Canopy's version, registered algorithms and CANOPY_* settings"};
  app.footer("\nExamples:\n  canopy-info                  everything\n  canopy-info --list-settings  the settings table only\n  canopy-info --markdown       the settings table for docs/configuration.md\n");
  bool settings_only = false, algorithms_only = false, markdown = false;
  app.add_flag("--list-settings", settings_only, "print only the CANOPY_* settings table");
  app.add_flag("--list-algorithms", algorithms_only, "print only the registered algorithms");
  app.add_flag("--markdown", markdown, "print the settings table in Markdown (as docs/configuration.md has it)");
  CLI11_PARSE(app, argc, argv);
  if (markdown) {
    std::cout << canopy::config::settings_markdown();
    return 0;
  }
  const bool all = !settings_only && !algorithms_only;
  if (all) std::cout << "Canopy " << CANOPY_VERSION_STRING << "\n\n";
  if (all || algorithms_only) {
    if (all) std::cout << "Algorithms (CANOPY_REDUCE_ALGO / CANOPY_BCAST_ALGO values besides native and auto):\n";
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
