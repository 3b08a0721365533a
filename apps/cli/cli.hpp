#pragma once
// Shared command-line conventions of every tool (target ht_cli: the tools and
// the tests of these helpers link it; no library does, so CLI11 stays on the
// tools' side): --version, --config FILE (unknown keys and malformed lines
// refused with their line number), -q/-v verbosity, defaults shown in --help,
// enum options that accept their names only, numeric checks worded in the
// option's terms.
//
// Exit codes of `run`: 0 on success and for --help / --version; 2 when the
// command line or the --config file cannot be parsed (one line
// "tool: error: ... (see --help)"); 1 when the body fails (an ht::Error,
// option errors thrown by the body included, out of memory, any other
// exception; one line "tool: error: ..."); 128 + signal when interrupted.
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include <CLI/CLI.hpp>

namespace ht::cli {

struct CommonOptions {
  int verbose = 0;
  bool quiet = false;
};

// Creates an app with the shared options bound to `common`.
void setup_app(CLI::App& app, CommonOptions& common);

// Parses, applies verbosity, runs `body`; returns the process exit code (see
// the top of this file).
int run(CLI::App& app, CommonOptions& common, int argc, char** argv, const std::function<void()>& body);

// Helpers of the name checks: equal ignoring case; "a, b, c".
bool same_name(const std::string& a, const std::string& b);
std::string names_list(const std::vector<std::string>& names);

// Validator accepting one of `names` (exactly, ignoring case; the value is
// replaced by the listed spelling); the error lists them.
CLI::Validator one_of(std::vector<std::string> names);

// Enum option: `--name value` where value is one of the map's keys (never the
// enum's number). --help shows the names and the current default.
template <typename E>
CLI::Option* add_enum(CLI::App& app, const std::string& name, E& target,
                      const std::map<std::string, E>& values, const std::string& help) {
  std::string names, current;
  std::vector<std::string> keys;
  for (const auto& [key, value] : values) {
    names += (names.empty() ? "" : "|") + key;
    keys.push_back(key);
    if (value == target) current = key;
  }
  const std::string list = names_list(keys);
  CLI::Validator names_only(
      [values, list](std::string& s) {
        for (const auto& [key, value] : values)
          if (same_name(key, s)) {
            s = std::to_string(static_cast<long long>(static_cast<std::underlying_type_t<E>>(value)));
            return std::string();
          }
        return "'" + s + "' is not one of " + list;
      },
      names, "");
  return app.add_option(name, target, help)
      ->transform(names_only)
      ->default_str(current);
}

// Numeric checks (finite numbers only; the message is in the option's terms,
// e.g. "--epochs: must be >= 1, got 0").
CLI::Validator at_least(double min);             // value >= min
CLI::Validator greater_than(double min);         // value > min
CLI::Validator in_range(double lo, double hi);   // lo <= value <= hi
CLI::Validator fraction();                       // 0 <= value < 1 (dropout rates, momentum)
CLI::Validator unsigned_integer();               // no sign: 0 .. 2^64-1 (seeds)

// Checks a --config file before it is parsed: every line blank, a comment
// (# or ;), `[default]` or `key = value` with a key that is an option of
// `app`. Throws ht::Error naming the file and the line.
void check_config_file(const CLI::App& app, const std::string& path);

}  // namespace ht::cli
