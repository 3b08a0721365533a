#include "train/metrics.hpp"

namespace ht {

MetricsWriter::MetricsWriter(const std::string& path) {
  if (!path.empty()) file_ = std::make_unique<AtomicFile>(path);
}

void MetricsWriter::write(const JsonWriter& object) {
  if (!file_) return;
  const std::string line = object.str() + "\n";
  file_->write(line.data(), line.size());
}

void MetricsWriter::commit() {
  if (file_) file_->commit();
}

}  // namespace ht
