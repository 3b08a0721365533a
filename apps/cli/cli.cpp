#include "cli/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/signals.hpp"
#include "core/version.hpp"

namespace ht::cli {

void setup_app(CLI::App& app, CommonOptions& common) {
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_string());
  app.set_config("--config", "", "Read options from a TOML/INI config file (keys = long option names)");
  app.allow_config_extras(CLI::config_extras_mode::error);
  app.add_flag("-v,--verbose", common.verbose, "More output (repeat for debug)");
  app.add_flag("-q,--quiet", common.quiet,
               "Log only warnings and errors on stderr (results printed on stdout still print)");
  app.get_formatter()->column_width(34);
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A number for the numeric checks; the error when it is not a finite one.
std::string parse_finite(const std::string& text, double& v) {
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) return fmt::format("'{}' is not a number", text);
  } catch (const std::exception&) {
    return fmt::format("'{}' is not a number", text);
  }
  if (!std::isfinite(v)) return fmt::format("must be a finite number, got {}", text);
  return "";
}

CLI::Validator numeric(std::function<bool(double)> ok, const std::string& rule, const std::string& shown) {
  return CLI::Validator(
      [ok, rule](std::string& s) {
        double v = 0;
        std::string err = parse_finite(s, v);
        if (err.empty() && !ok(v)) err = fmt::format("must be {}, got {}", rule, s);
        return err;
      },
      shown, "");
}

std::string fmt_num(double v) { return fmt::format("{}", v); }

// The value of --config in argv, if any ("--config F" or "--config=F").
std::string config_in_argv(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) path = argv[i + 1];
    else if (std::strncmp(argv[i], "--config=", 9) == 0) path = argv[i] + 9;
  }
  return path;
}

}  // namespace

bool same_name(const std::string& a, const std::string& b) { return lower(a) == lower(b); }

std::string names_list(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

CLI::Validator one_of(std::vector<std::string> names) {
  const std::string list = names_list(names);
  return CLI::Validator(
      [names, list](std::string& s) {
        for (const std::string& n : names)
          if (same_name(n, s)) {
            s = n;
            return std::string();
          }
        return fmt::format("'{}' is not one of {}", s, list);
      },
      "", "");
}

CLI::Validator at_least(double min) {
  return numeric([min](double v) { return v >= min; }, ">= " + fmt_num(min), "≥ " + fmt_num(min));
}

CLI::Validator greater_than(double min) {
  return numeric([min](double v) { return v > min; }, "> " + fmt_num(min), "> " + fmt_num(min));
}

CLI::Validator in_range(double lo, double hi) {
  const std::string rule = fmt::format("in [{}, {}]", lo, hi);
  return numeric([lo, hi](double v) { return v >= lo && v <= hi; }, rule, rule);
}

CLI::Validator fraction() {
  return numeric([](double v) { return v >= 0 && v < 1; }, "in [0, 1)", "in [0, 1)");
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& s) {
        const bool digits = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (!digits) return fmt::format("must be an integer in [0, 2^64), got {}", s);
        try {
          (void)std::stoull(s);
        } catch (const std::exception&) {
          return fmt::format("must be an integer in [0, 2^64), got {}", s);
        }
        return std::string();
      },
      "", "");
}

void check_config_file(const CLI::App& app, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, "cannot open the config file");
  std::string raw;
  int64_t line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    if (line_no == 1 && raw.rfind("\xEF\xBB\xBF", 0) == 0)
      throw line_error(path, line_no, "starts with a UTF-8 byte-order mark; save the file without it");
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    if (raw.find('\0') != std::string::npos) throw line_error(path, line_no, "NUL byte in the config file");
    if (raw.find('\r') != std::string::npos)
      throw line_error(path, line_no, "carriage return inside a line (old Mac line ends?); use \\n line ends");
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (lower(line) == "[default]") continue;
      throw line_error(path, line_no, fmt::format("section '{}' is not used; put options at the top as key = value", line));
    }
    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      throw line_error(path, line_no, fmt::format("'{}' is not a 'key = value' line", line));
    const std::string key = trim(line.substr(0, eq));
    const std::string value = trim(line.substr(eq + 1));
    if (key.empty()) throw line_error(path, line_no, "missing key before '='");
    const bool known_key = key.find_first_of(" \t-") != 0 && app.get_option_no_throw("--" + key) != nullptr;
    if (!known_key || key == "config" || key == "help" || key == "version")
      throw line_error(path, line_no, fmt::format("unknown option '{}' (keys are long option names without --)", key));
    if (value.empty()) throw line_error(path, line_no, fmt::format("'{}' has no value", key));
    // A TOML array for an option of one value would reach CLI11 as the
    // option given once per element ("--layers given 3 times").
    const CLI::Option* option = app.get_option_no_throw("--" + key);
    if (value.front() == '[' && option->get_expected_max() <= 1) {
      std::string items = value.substr(1, value.find(']') == std::string::npos ? std::string::npos : value.find(']') - 1);
      for (char& c : items)
        if (c == ',') c = ' ';
      std::string joined;
      for (std::istringstream words(items); words >> raw;) joined += (joined.empty() ? "" : "-") + raw;
      throw line_error(path, line_no,
                       fmt::format("'{}' takes one value, not a list{}", key,
                                   key == "layers" ? fmt::format(" (widths are one value: layers = \"{}\")", joined)
                                                   : std::string()));
    }
  }
}

// A usage error in the option's own terms where CLI11's text is obscure: an
// option given more times than it takes values ("--hidden: At Most 1 required
// but received 2") is named with its count.
static std::string usage_message(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const std::string mark = ": At Most ";
    const size_t at = what.find(mark);
    const size_t got = what.find(" required but received ");
    if (at != std::string::npos && got != std::string::npos && got > at) {
      const std::string name = what.substr(0, at);
      const std::string most = what.substr(at + mark.size(), got - at - mark.size());
      const std::string received = what.substr(got + std::strlen(" required but received "));
      if (most == "1")
        return fmt::format("option {} given {} times; give it once", name.empty() ? "?" : name, received);
      return fmt::format("option {} takes at most {} values, got {}", name, most, received);
    }
  }
  return what;
}

int run(CLI::App& app, CommonOptions& common, int argc, char** argv, const std::function<void()>& body) {
  signals::install(app.get_name(), false);
  try {
    const std::string config = config_in_argv(argc, argv);
    if (!config.empty()) check_config_file(app, config);
  } catch (const ht::Error& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a usage error is one line.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string message = usage_message(e);
    // CLI11 checks the required options before it complains of unknown ones:
    // `--grpah g.htg` would be reported as "--graph is required", hiding the typo.
    if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !app.remaining().empty())
      message = CLI::ExtrasError(app.remaining()).what();
    fmt::print(stderr, "{}: error: {} (see --help)\n", app.get_name(), message);
    return 2;
  }
  if (common.quiet) log::set_level(log::Level::warn);
  else if (common.verbose > 0) log::set_level(log::Level::debug);
  try {
    body();
    return 0;
  } catch (const signals::Interrupted& e) {
    if (*e.what() != '\0') fmt::print(stderr, "{}: {}\n", app.get_name(), e.what());  // (empty: said by another process)
    return e.exit_code();
  } catch (const ht::UsageError& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
    return 2;  // the command line, as a parse error
  } catch (const ht::Error& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "{}: error: out of memory\n", app.get_name());
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", app.get_name(), e.what());
  }
  return 1;
}

}  // namespace ht::cli
