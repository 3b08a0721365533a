#pragma once
// The toolkit's version line, as --version prints it and reports record it.
#include <string>

namespace ht {

// "hongtu 0.1.0 (executors: cpu, cuda)", or "(executors: cpu; built without CUDA)".
std::string version_string();

// The git commit the build was configured at ("<40 hex>" or "<40 hex>-dirty"),
// empty when it was not built from a git checkout. CMake reads it at
// configure time, so a build not reconfigured since the last commit names an
// older one; reports record it beside the version so a result can be traced.
std::string build_commit();

}  // namespace ht
