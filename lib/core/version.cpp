#include "core/version.hpp"

#ifndef HT_VERSION
#define HT_VERSION "0.0.0"
#endif
namespace ht {
namespace detail {
extern const char* const kBuildCommit;  // the generated build_commit.cpp (lib/CMakeLists.txt)
}

std::string version_string() {
#ifdef HT_BUILT_WITH_CUDA
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu, cuda)";
#else
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu; built without CUDA)";
#endif
}

std::string build_commit() { return detail::kBuildCommit; }

}  // namespace ht
