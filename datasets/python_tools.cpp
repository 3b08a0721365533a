#include "datasets/python_tools.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "core/timer.hpp"

extern char** environ;

#ifndef HT_SOURCE_DIR
#define HT_SOURCE_DIR "."
#endif

namespace ht::data {
namespace {

// The last non-empty line of a script's output: its error message.
std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return {};
  size_t begin = text.rfind('\n', end);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::string line = text.substr(begin, end - begin + 1);
  if (line.rfind("error: ", 0) == 0) line.erase(0, 7);
  return line;
}

}  // namespace

ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ht-convert-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    throw file_error(tmpl, fmt::format("cannot create a temporary directory: {}", std::strerror(errno)));
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string python_executable() {
  const char* env = std::getenv("HT_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

// An installed tool (make install) finds its helpers in PREFIX/share/hongtu/datasets
// beside its own PREFIX/bin; a build tree's, in the sources.
std::string installed_scripts_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path dir = exe.parent_path().parent_path() / "share" / "hongtu" / "datasets";
  return std::filesystem::is_directory(dir, ec) ? dir.string() : "";
}

std::string helper_script(const std::string& name) {
  const char* env = std::getenv("HT_DATASETS_SCRIPTS");
  const std::string installed = env && *env ? std::string() : installed_scripts_dir();
  const std::string dir =
      env && *env ? env : (!installed.empty() ? installed : std::string(HT_SOURCE_DIR) + "/datasets");
  const std::string path = dir + "/" + name;
  if (!file_exists(path))
    throw file_error(path, "helper script not found (set HT_DATASETS_SCRIPTS to the folder holding it)");
  return path;
}

void run_python_script(const std::string& script, const std::vector<std::string>& args, const std::string& input) {
  const std::string python = python_executable();
  ScratchDir logs;
  const std::string log_path = logs.file("output.txt");
  std::vector<std::string> argv_text{python, script};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  log::debug("running {} {}", python, script);
  Timer timer;
  const int rc = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw file_error(input, fmt::format("cannot run the Python interpreter '{}': {} (set HT_PYTHON)", python,
                                        std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string output = file_exists(log_path) ? read_text_file(log_path) : std::string();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = last_line(output);
    if (why.empty()) why = WIFEXITED(status) ? fmt::format("exit code {}", WEXITSTATUS(status)) : "killed by a signal";
    throw file_error(input, fmt::format("{} (from {} {})", why, python, std::filesystem::path(script).filename().string()));
  }
  log::debug("{} finished in {:.2f} s{}{}", script, timer.seconds(), output.empty() ? "" : ":\n", output);
}

}  // namespace ht::data
