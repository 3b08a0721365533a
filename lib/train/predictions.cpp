#include "train/predictions.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/npy_header.hpp"

namespace ht {

std::unique_ptr<AtomicFile> write_predictions(const std::string& path, const std::vector<float>& logits,
                                              int64_t classes, const Partition& part, const GraphView& g) {
  std::vector<int32_t> pred(g.num_vertices);
  for (int64_t v = 0; v < g.num_vertices; ++v) {
    const float* z = logits.data() + v * classes;
    pred[part.new_to_old[v]] = static_cast<int32_t>(std::max_element(z, z + classes) - z);
  }
  std::string out = "id,prediction\n";
  for (int64_t old = 0; old < g.num_vertices; ++old)
    out += fmt::format("{},{}\n", g.orig_ids.empty() ? old : g.orig_ids[old], pred[old]);
  auto f = std::make_unique<AtomicFile>(path);
  f->write(out.data(), out.size());
  return f;
}

std::unique_ptr<AtomicFile> write_logits_npy(const std::string& path, const std::vector<float>& logits,
                                             int64_t classes, const Partition& part, const GraphView& g) {
  return write_rows_npy(path, logits, classes, part, g);
}

std::unique_ptr<AtomicFile> write_rows_npy(const std::string& path, const std::vector<float>& logits,
                                           int64_t classes, const Partition& part, const GraphView& g) {
  const std::string header = npy_header("<f4", fmt::format("({}, {})", g.num_vertices, classes));
  std::vector<float> rows(logits.size());
  for (int64_t v = 0; v < g.num_vertices; ++v)
    std::copy_n(logits.data() + v * classes, classes, rows.data() + part.new_to_old[v] * classes);
  auto f = std::make_unique<AtomicFile>(path);
  f->write(header.data(), header.size());
  f->write(rows.data(), rows.size() * sizeof(float));
  return f;
}

}  // namespace ht

