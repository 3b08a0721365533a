#include "core/version.hpp"

#ifndef HT_VERSION
#define HT_VERSION "0.0.0"
#endif
#ifndef HT_GIT_COMMIT
#define HT_GIT_COMMIT ""
#endif

namespace ht {

std::string version_string() {
#ifdef HT_BUILT_WITH_CUDA
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu, cuda)";
#else
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu; built without CUDA)";
#endif
}

std::string build_commit() { return HT_GIT_COMMIT; }

}  // namespace ht
