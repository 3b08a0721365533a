#include "datasets/npy_edges.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "datasets/npy.hpp"

namespace ht::data {
namespace {

// True when the array is (2, E): sources are elements [0, E), destinations [E, 2E).
bool is_index_layout(const NpyArray& a, EdgeArrayShape shape) {
  const char* want = shape == EdgeArrayShape::pairs   ? "(E, 2)"
                     : shape == EdgeArrayShape::index ? "(2, E)"
                                                      : "(E, 2) or (2, E)";
  const bool pairs_ok = a.ndim() == 2 && a.cols() == 2 && shape != EdgeArrayShape::index;
  const bool index_ok = a.ndim() == 2 && a.rows() == 2 && shape != EdgeArrayShape::pairs;
  if (!a.is_integral() || (!pairs_ok && !index_ok))
    throw file_error(a.path(), fmt::format("edges must be an integer array of shape {}, got {} {}", want,
                                           npy_type_name(a.type()), a.shape_text()));
  return !pairs_ok;
}

}  // namespace

RawEdges read_npy_edges(const std::string& path, int64_t num_vertices, EdgeArrayShape shape) {
  return read_npy_edges(NpyArray(path), num_vertices, shape);
}

RawEdges read_npy_edges(const NpyArray& a, int64_t num_vertices, EdgeArrayShape shape) {
  const std::string& path = a.path();
  const bool index = is_index_layout(a, shape);
  const int64_t m = index ? a.cols() : a.rows();
  // Element positions of edge i's source and destination.
  const auto src_at = [&](int64_t i) { return index ? i : 2 * i; };
  const auto dst_at = [&](int64_t i) { return index ? m + i : 2 * i + 1; };
  RawEdges e;
  e.src.resize(m);
  e.dst.resize(m);
  int64_t bad = m;  // the first bad edge, whatever the thread count
#pragma omp parallel for reduction(min : bad) if (m > (1 << 16))
  for (int64_t i = 0; i < m; ++i) {
    const int64_t s = a.as_int64(src_at(i)), d = a.as_int64(dst_at(i));
    if (s < 0 || s >= num_vertices || d < 0 || d >= num_vertices) bad = std::min(bad, i);
    e.src[i] = static_cast<uint64_t>(s);
    e.dst[i] = static_cast<uint64_t>(d);
  }
  if (bad < m) {
    const int64_t s = a.as_int64(src_at(bad)), d = a.as_int64(dst_at(bad));
    throw offset_error(path, a.offset_of(src_at(bad)),
                       fmt::format("edge {} ({} -> {}) has an id outside 0..{}", bad, s, d, num_vertices - 1));
  }
  return e;
}

int64_t npy_edges_vertex_count(const NpyArray& a, EdgeArrayShape shape) {
  is_index_layout(a, shape);
  const int64_t n = a.count();
  int64_t hi = -1, lo = 0;
#pragma omp parallel for reduction(max : hi) reduction(min : lo) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = a.as_int64(i);
    hi = std::max(hi, v);
    lo = std::min(lo, v);
  }
  if (lo < 0) throw file_error(a.path(), fmt::format("edges hold a negative vertex id ({})", lo));
  return hi + 1;
}

}  // namespace ht::data
