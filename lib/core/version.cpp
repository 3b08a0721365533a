#include "core/version.hpp"

#ifndef HT_VERSION
#define HT_VERSION "0.0.0"
#endif

namespace ht {

std::string version_string() {
#ifdef HT_BUILT_WITH_CUDA
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu, cuda)";
#else
  return std::string("hongtu ") + HT_VERSION + " (executors: cpu; built without CUDA)";
#endif
}

}  // namespace ht
