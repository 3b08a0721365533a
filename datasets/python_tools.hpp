#pragma once
// Running the helper Python scripts of datasets/ (Planetoid pickles are
// decoded by numpy/scipy; .npz archives are read in C++, datasets/npz.hpp). The interpreter is $HT_PYTHON
// (default /usr/bin/python3, Debian's, which has numpy and scipy); the
// scripts are found in $HT_DATASETS_SCRIPTS, else in the source tree's
// datasets/ folder (compile definition HT_SOURCE_DIR).
#include <string>
#include <vector>

namespace ht::data {

// A fresh private directory, removed with its contents at scope exit.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

std::string python_executable();
std::string helper_script(const std::string& name);

// Runs `python script args...`. On failure throws ht::Error naming `input`
// with the script's last error line.
void run_python_script(const std::string& script, const std::vector<std::string>& args, const std::string& input);

}  // namespace ht::data
