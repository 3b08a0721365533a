// The tools' command-line helpers (apps/cli/, target ht_cli): enum options,
// numeric checks, the --config check and the exit codes of run(). The only
// test that links ht_cli (and so CLI11).
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli.hpp"
#include "core/error.hpp"
#include "core/version.hpp"
#include "test_util.hpp"

namespace ht {
namespace {

enum class Color { red, green, blue };

const std::map<std::string, Color> kColors{{"red", Color::red}, {"green", Color::green}, {"blue", Color::blue}};

// Runs `app` through cli::run on `args`; the exit code, and stderr in `err`.
int run_app(CLI::App& app, cli::CommonOptions& common, std::vector<std::string> args, std::string& err,
            const std::function<void()>& body = [] {}) {
  args.insert(args.begin(), app.get_name());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  const int code = cli::run(app, common, static_cast<int>(argv.size()), argv.data(), body);
  err = testing::internal::GetCapturedStderr();
  return code;
}

TEST(CliEnum, TakesNamesIgnoringCaseAndShowsTheDefault) {
  for (const auto& [given, expected] : std::vector<std::pair<std::string, Color>>{
           {"blue", Color::blue}, {"BLUE", Color::blue}, {"Red", Color::red}}) {
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    cli::setup_app(app, common);
    Color c = Color::green;
    cli::add_enum(app, "--color", c, kColors, "Color");
    std::string err;
    EXPECT_EQ(run_app(app, common, {"--color", given}, err), 0) << err;
    EXPECT_EQ(c, expected) << given;
  }
  CLI::App app{"test", "tool"};
  cli::CommonOptions common;
  cli::setup_app(app, common);
  Color c = Color::green;
  cli::add_enum(app, "--color", c, kColors, "Color");
  const std::string help = app.help();
  EXPECT_NE(help.find("--color ENUM:blue|green|red=green"), std::string::npos) << help;
}

TEST(CliEnum, RefusesNumbersAndOtherNamesWithExitCode2) {
  for (const std::string given : {"1", "purple", ""}) {
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    cli::setup_app(app, common);
    Color c = Color::green;
    cli::add_enum(app, "--color", c, kColors, "Color");
    bool ran = false;
    std::string err;
    EXPECT_EQ(run_app(app, common, {"--color", given}, err, [&] { ran = true; }), 2) << given;
    EXPECT_FALSE(ran);
    EXPECT_EQ(c, Color::green);
    EXPECT_NE(err.find("tool: error: "), std::string::npos) << err;
    EXPECT_NE(err.find("is not one of blue, green, red"), std::string::npos) << err;
    EXPECT_NE(err.find("(see --help)"), std::string::npos) << err;
  }
}

TEST(CliChecks, NumericMessagesInTheOptionsTerms) {
  struct Case {
    CLI::Validator check;
    std::string value, message;  // message empty: accepted
  };
  const std::vector<Case> cases{
      {cli::at_least(1), "1", ""},
      {cli::at_least(1), "0", "must be >= 1, got 0"},
      {cli::greater_than(1), "1", "must be > 1, got 1"},
      {cli::in_range(0, 9), "9", ""},
      {cli::in_range(0, 9), "10", "must be in [0, 9], got 10"},
      {cli::in_range(0, 9), "x", "'x' is not a number"},
      {cli::in_range(0, 9), "nan", "must be a finite number, got nan"},
      {cli::fraction(), "0.5", ""},
      {cli::fraction(), "1", "must be in [0, 1), got 1"},
      {cli::unsigned_integer(), "18446744073709551615", ""},
      {cli::unsigned_integer(), "-1", "must be an integer in [0, 2^64), got -1"},
      {cli::unsigned_integer(), "18446744073709551616", "must be an integer in [0, 2^64), got 18446744073709551616"},
      {cli::one_of({"auto", "cpu"}), "CPU", ""},
      {cli::one_of({"auto", "cpu"}), "gpu", "'gpu' is not one of auto, cpu"},
  };
  for (const Case& c : cases) {
    std::string v = c.value;
    EXPECT_EQ(c.check(v), c.message) << c.value;
  }
  std::string v = "CPU";
  cli::one_of({"auto", "cpu"})(v);
  EXPECT_EQ(v, "cpu");  // the listed spelling
}

TEST(CliRun, ExitCodes) {
  auto make = [](CLI::App& app, cli::CommonOptions& common, int& epochs) {
    cli::setup_app(app, common);
    app.add_option("--epochs", epochs, "Epochs")->check(cli::at_least(1));
  };
  std::string err;
  {  // success
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    EXPECT_EQ(run_app(app, common, {"--epochs", "3"}, err), 0);
    EXPECT_EQ(epochs, 3);
    EXPECT_EQ(err, "");
  }
  {  // usage error: 2, one line
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    EXPECT_EQ(run_app(app, common, {"--epochs", "0"}, err), 2);
    EXPECT_EQ(err, "tool: error: --epochs: must be >= 1, got 0 (see --help)\n");
    EXPECT_EQ(run_app(app, common, {"--nope"}, err), 2);
  }
  {  // an option given twice is named with its count
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    EXPECT_EQ(run_app(app, common, {"--epochs", "3", "--epochs", "4"}, err), 2);
    EXPECT_NE(err.find("option --epochs given 2 times; give it once"), std::string::npos) << err;
  }
  {  // the body fails, option errors included: 1
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    EXPECT_EQ(run_app(app, common, {}, err, [] { throw option_error("--epochs", "too many for this graph"); }), 1);
    EXPECT_EQ(err, "tool: error: option --epochs: too many for this graph\n");
    EXPECT_EQ(run_app(app, common, {}, err, [] { throw std::bad_alloc(); }), 1);
    EXPECT_EQ(err, "tool: error: out of memory\n");
  }
  {  // a usage error found after parsing (a required option missing, modes that exclude each other): 2
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    EXPECT_EQ(run_app(app, common, {}, err, [] { throw usage_error("--output", "required: the file to write"); }), 2);
    EXPECT_EQ(err, "tool: error: option --output: required: the file to write\n");
  }
  {  // an unknown option is reported before a missing required one (the typo is the news)
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    std::string graph;
    cli::setup_app(app, common);
    app.add_option("--graph", graph, "Graph")->required();
    EXPECT_EQ(run_app(app, common, {"--grpah", "g.htg"}, err), 2);
    EXPECT_NE(err.find("not expected"), std::string::npos) << err;
    EXPECT_NE(err.find("--grpah"), std::string::npos) << err;
    EXPECT_EQ(err.find("required"), std::string::npos) << err;
    EXPECT_EQ(run_app(app, common, {}, err), 2);  // nothing unknown: the required option is named
    EXPECT_NE(err.find("--graph is required"), std::string::npos) << err;
  }
  {  // --version prints and succeeds
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    int epochs = 0;
    make(app, common, epochs);
    bool ran = false;
    testing::internal::CaptureStdout();
    EXPECT_EQ(run_app(app, common, {"--version"}, err, [&] { ran = true; }), 0);
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_FALSE(ran);
    EXPECT_NE(out.find(version_string()), std::string::npos) << out;
  }
}

TEST(CliConfig, ChecksEveryLineBeforeParsing) {
  test::TempDir dir;
  auto run_with = [&](const std::string& text, std::string& err, int& epochs) {
    const std::string path = dir.file("c.toml");
    test::write_file(path, text);
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    cli::setup_app(app, common);
    app.add_option("--epochs", epochs, "Epochs")->check(cli::at_least(1));
    return run_app(app, common, {"--config", path}, err);
  };
  std::string err;
  int epochs = 0;
  EXPECT_EQ(run_with("# comment\n[default]\nepochs = 5\n", err, epochs), 0) << err;
  EXPECT_EQ(epochs, 5);
  EXPECT_EQ(run_with("epochs = 5\nepoch = 6\n", err, epochs), 2);
  EXPECT_NE(err.find("c.toml:2"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown option 'epoch'"), std::string::npos) << err;
  EXPECT_EQ(run_with("epochs 5\n", err, epochs), 2);
  EXPECT_NE(err.find("is not a 'key = value' line"), std::string::npos) << err;
  EXPECT_EQ(run_with("epochs = 0\n", err, epochs), 2);
  EXPECT_NE(err.find("must be >= 1, got 0"), std::string::npos) << err;
  // A list for an option of one value: said so (CLI11 saw it given once per element).
  EXPECT_EQ(run_with("epochs = [3, 4]\n", err, epochs), 2);
  EXPECT_NE(err.find("c.toml:1: 'epochs' takes one value, not a list"), std::string::npos) << err;
  EXPECT_EQ(err.find("given 2 times"), std::string::npos) << err;
  {  // --layers: the line to write instead
    const std::string path = dir.file("l.toml");
    test::write_file(path, "layers = [32, 16,5]\n");
    CLI::App app{"test", "tool"};
    cli::CommonOptions common;
    cli::setup_app(app, common);
    std::string layers;
    app.add_option("--layers", layers, "Widths");
    EXPECT_EQ(run_app(app, common, {"--config", path}, err), 2);
    EXPECT_NE(err.find("'layers' takes one value, not a list (widths are one value: layers = \"32-16-5\")"),
              std::string::npos)
        << err;
  }
}

}  // namespace
}  // namespace ht
