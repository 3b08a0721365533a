#pragma once
// `ht-convert --inspect FILE`: validates a graph file (container checks,
// checksums unless skipped, topology and vertex data, and that every header
// flag that is set holds for the data) and prints its statistics, as text or
// as one JSON object (keys in docs/CONVERT.md).
#include <string>

namespace ht::data {

struct InspectOptions {
  std::string path;
  bool json = false;
  bool verify_checksums = true;
};

// Returns the report (text or JSON); throws ht::Error for an invalid file.
std::string inspect_graph_file(const InspectOptions& opt);

}  // namespace ht::data
