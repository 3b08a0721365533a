#include "engine/store_features.hpp"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "engine/host_rows.hpp"

namespace ht {
namespace {

bool permuted(const FeatureSource& s) { return !s.new_to_old.empty(); }

void check_source(const FeatureSource& s) {
  HT_CHECK(s.graph.has_features(), "the graph has no features");
  HT_CHECK(!permuted(s) || (static_cast<int64_t>(s.new_to_old.size()) == s.rows() &&
                            static_cast<int64_t>(s.old_to_new.size()) == s.rows()),
           "feature source: {} rows but a renumbering of {} / {}", s.rows(), s.new_to_old.size(), s.old_to_new.size());
}

// One row of fp32 per thread, reused by every row the thread converts.
std::span<float> row_buffer(int64_t f) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(f));
  return row;
}

// Row o of the graph's features as fp32, normalized when asked: exactly what
// widening, then the training job's row normalization, gave before.
void source_row(const FeatureSource& s, int64_t o, std::span<float> row) {
  s.graph.load_feature_row(o, row);
  if (!s.normalize) return;
  double sum = 0;
  for (const float x : row) sum += x;
  if (sum != 0)
    for (float& x : row) x = static_cast<float>(x / sum);
}

// body(graph_row, store_row) for every row: blocks of graph rows in
// parallel, ascending inside a block (the file is read in order), then
// rows_read for the block.
template <typename Body>
void for_each_row(const FeatureSource& s, Body body) {
  parallel_blocks(s.rows(), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) body(o, permuted(s) ? static_cast<int64_t>(s.old_to_new[o]) : o);
    if (s.rows_read) s.rows_read(b, e);
  });
}

// The fp32 matrix of the source in store order (an in-memory store on a GPU
// takes its features through one upload), in a block of huge pages: a
// vector's 4 KiB pages took more system time to fault than the upload took
// (community in memory: h^0 0.30 s, of it 0.8 s of the kernel's over 32
// threads; issue 33).
HostBlock fp32_rows(const FeatureSource& s) {
  const int64_t f = s.cols();
  HostBlock x(static_cast<size_t>(s.rows() * f) * sizeof(float));
  float* out = reinterpret_cast<float*>(x.data());
  for_each_row(s, [&](int64_t o, int64_t v) { source_row(s, o, std::span<float>(out + v * f, f)); });
  return x;
}

}  // namespace

// fp16 holds magnitudes up to 65504: a larger feature would be stored as
// Inf, so it is refused before training (bf16 has fp32's range).
void check_f16_range(const FeatureSource& s) {
  check_source(s);
  const int64_t f = s.cols();
  const int64_t bad_row = first_bad(s.rows(), [&](int64_t o) {
    std::span<float> row = row_buffer(f);
    source_row(s, o, row);
    for (const float x : row)
      if (!(std::fabs(x) <= kF16Max)) return true;
    return false;
  });
  if (bad_row < 0) return;
  std::vector<float> row(static_cast<size_t>(f));
  source_row(s, bad_row, row);
  int64_t c = 0;
  while (c < f && std::fabs(row[c]) <= kF16Max) ++c;
  const StoreDtype t = s.graph.feature_dtype;
  const std::string in_file = t == StoreDtype::f32 ? "" : fmt::format(" ({} in the graph file)", dtype_name(t));
  throw Error(fmt::format("feature {} of vertex {} is {}{}{}, outside fp16's range (±{}): --host-dtype fp16 cannot "
                          "store it; use --host-dtype bf16 (fp32's range) or scale the features",
                          c, bad_row, row[c], s.normalize ? " after row normalization" : "", in_file, kF16Max));
}

void fill_feature_store(Executor& exec, const HostMat& dst, const FeatureSource& s) {
  const GraphView& g = s.graph;
  HT_CHECK(dst.rows == g.num_vertices && dst.cols == g.feature_dim && g.has_features(),
           "the feature store is {} x {} but the graph has {} x {} features", dst.rows, dst.cols, g.num_vertices,
           g.has_features() ? g.feature_dim : 0);
  check_source(s);
  const bool as_is = !permuted(s) && !s.normalize;
  if (dst.on_device()) {  // in-memory mode: an fp32 store in device memory
    if (as_is && g.feature_dtype == StoreDtype::f32) return exec.store_fill(dst, g.features);
    const HostBlock x = fp32_rows(s);
    return exec.store_fill(dst, {reinterpret_cast<const float*>(x.data()), x.size() / sizeof(float)});
  }
  exec.synchronize_all();  // as Executor::store_fill: no queue may still write the rows
  const int64_t f = s.cols();
  if (as_is && dst.dtype == g.feature_dtype) {  // the rows held, as they are in the file
    const size_t row_bytes = static_cast<size_t>(f) * dtype_bytes(dst.dtype);
    const int64_t r0 = dst.held_first(), r1 = dst.held_last();
    parallel_copy(dst.row_bytes(r0), g.feature_bytes().data() + r0 * row_bytes, (r1 - r0) * row_bytes);
    if (s.rows_read) s.rows_read(r0, r1);
    return;
  }
  if (dst.dtype != StoreDtype::f32 && g.feature_dtype != StoreDtype::f32 && dst.dtype != g.feature_dtype)
    log::info("features: {} in the graph file, {} in the store: widened and rounded again", dtype_name(g.feature_dtype),
              dtype_name(dst.dtype));
  if (!s.normalize && dst.dtype == g.feature_dtype) {  // rows moved as they are
    const size_t row_bytes = static_cast<size_t>(f) * dtype_bytes(dst.dtype);
    const std::byte* src = g.feature_bytes().data();
    for_each_row(s, [&](int64_t o, int64_t v) {
      if (dst.holds(v)) std::memcpy(dst.row_bytes(v), src + o * row_bytes, row_bytes);
    });
    return;
  }
  for_each_row(s, [&](int64_t o, int64_t v) {
    if (!dst.holds(v)) return;  // another process's row (a multi-process job)
    std::span<float> row = row_buffer(f);
    source_row(s, o, row);
    store_row(dst, v, row.data(), f);
  });
}

}  // namespace ht
