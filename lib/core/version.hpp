#pragma once
// The toolkit's version line, as --version prints it and reports record it.
#include <string>

namespace ht {

// "hongtu 0.1.0 (executors: cpu, cuda)", or "(executors: cpu; built without CUDA)".
std::string version_string();

}  // namespace ht
