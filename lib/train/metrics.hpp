#pragma once
// --metrics-out: JSON lines, one object per epoch ("type": "epoch") and a
// final summary ("type": "summary"). Written through an atomic file: the
// file appears (renamed into place) only when the run completes.
#include <memory>
#include <string>

#include "core/file_io.hpp"
#include "core/json.hpp"

namespace ht {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path);  // empty path: disabled
  void write(const JsonWriter& object);
  void commit();

 private:
  std::unique_ptr<AtomicFile> file_;
};

}  // namespace ht
