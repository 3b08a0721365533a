#include "datasets/npy_edges.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "datasets/npy.hpp"

namespace ht::data {

RawEdges read_npy_edges(const std::string& path, int64_t num_vertices) { return read_npy_edges(NpyArray(path), num_vertices); }

RawEdges read_npy_edges(const NpyArray& a, int64_t num_vertices) {
  const std::string& path = a.path();
  if (a.ndim() != 2 || a.cols() != 2 || !a.is_integral())
    throw file_error(path, fmt::format("edges must be an integer array of shape (E, 2), got {} {}",
                                       npy_type_name(a.type()), a.shape_text()));
  RawEdges e;
  const int64_t m = a.rows();
  e.src.resize(m);
  e.dst.resize(m);
  int64_t bad = -1;
#pragma omp parallel for reduction(max : bad) if (m > (1 << 16))
  for (int64_t i = 0; i < m; ++i) {
    const int64_t s = a.as_int64(2 * i), d = a.as_int64(2 * i + 1);
    if (s < 0 || s >= num_vertices || d < 0 || d >= num_vertices) bad = std::max(bad, i);
    e.src[i] = static_cast<uint64_t>(s);
    e.dst[i] = static_cast<uint64_t>(d);
  }
  if (bad >= 0)
    throw offset_error(path, a.offset_of(2 * bad),
                       fmt::format("edge {} ({} -> {}) has an id outside 0..{}", bad, a.as_int64(2 * bad),
                                   a.as_int64(2 * bad + 1), num_vertices - 1));
  return e;
}

}  // namespace ht::data
