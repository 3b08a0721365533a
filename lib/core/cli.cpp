#include "core/cli.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "core/log.hpp"

#ifndef HT_VERSION
#define HT_VERSION "0.0.0"
#endif

namespace ht::cli {

std::string version_string() {
#ifdef HT_BUILT_WITH_CUDA
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu, cuda)";
#else
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu; built without CUDA)";
#endif
}

void setup_app(CLI::App& app, CommonOptions& common) {
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", version_string());
  app.set_config("--config", "", "Read options from a TOML/INI config file (keys = long option names)");
  app.add_flag("-v,--verbose", common.verbose, "More output (repeat for debug)");
  app.add_flag("-q,--quiet", common.quiet, "Only warnings and errors");
  app.get_formatter()->column_width(34);
}

int run(CLI::App& app, CommonOptions& common, int argc, char** argv, const std::function<void()>& body) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; a usage error is one line.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "{}: error: {} (see --help)\n", app.get_name(), e.what());
    return 2;
  }
  if (common.quiet) log::set_level(log::Level::warn);
  else if (common.verbose > 0) log::set_level(log::Level::debug);
  try {
    body();
    return 0;
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
