#pragma once
// Shared command-line conventions of every tool: --version, --config FILE,
// -q/-v verbosity, defaults shown in --help, enum options through a
// CheckedTransformer, one error line and exit code 1 on failure.
#include <functional>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

namespace ht::cli {

struct CommonOptions {
  int verbose = 0;
  bool quiet = false;
};

// Creates an app with the shared options bound to `common`.
void setup_app(CLI::App& app, CommonOptions& common);

// Parses, applies verbosity, runs `body`; returns the process exit code.
int run(CLI::App& app, CommonOptions& common, int argc, char** argv, const std::function<void()>& body);

// Enum option: `--name value` where value is one of the map's keys.
// --help shows the names (not the enum values) and the current default.
template <typename E>
CLI::Option* add_enum(CLI::App& app, const std::string& name, E& target,
                      const std::map<std::string, E>& values, const std::string& help) {
  std::string names, current;
  for (const auto& [key, value] : values) {
    names += (names.empty() ? "" : "|") + key;
    if (value == target) current = key;
  }
  return app.add_option(name, target, help)
      ->transform(CLI::CheckedTransformer(values, CLI::ignore_case).description(names))
      ->default_str(current);
}

std::string version_string();

}  // namespace ht::cli
