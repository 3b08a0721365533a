#include "datasets/npz_sparse.hpp"

#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "datasets/npy.hpp"
#include "datasets/npz.hpp"

namespace ht::data {
namespace {

std::vector<int64_t> integers(const NpyArray& a, const char* what) {
  if (!a.is_integral() || a.ndim() != 1)
    throw file_error(a.path(), fmt::format("{} must be a 1-D integer array, got {} {}", what, npy_type_name(a.type()),
                                           a.shape_text()));
  std::vector<int64_t> v(static_cast<size_t>(a.rows()));
  for (int64_t i = 0; i < a.rows(); ++i) v[i] = a.as_int64(i);
  return v;
}

void check_index(int64_t v, int64_t limit, const NpyArray& a, int64_t i, const char* what) {
  if (v < 0 || v >= limit)
    throw offset_error(a.path(), a.offset_of(i),
                       fmt::format("entry {}: {} {} is outside 0..{}", i, what, v, limit - 1));
}

}  // namespace

bool has_sparse(const NpzArchive& z, const std::string& prefix) {
  return z.has(prefix + "indptr") || (z.has(prefix + "row") && z.has(prefix + "col"));
}

SparseEntries read_sparse(const NpzArchive& z, const std::string& prefix, std::string format) {
  if (format.empty()) format = z.has(prefix + "format") ? z.string_scalar(prefix + "format") : "csr";
  SparseEntries m;
  m.name = fmt::format("{}:{}*", z.path(), prefix);
  if (format != "csr" && format != "csc" && format != "coo")
    throw file_error(m.name, fmt::format("sparse format '{}' is not supported (csr, csc or coo)", format));
  const NpyArray shape = z.array(prefix + "shape");
  if (!shape.is_integral() || shape.ndim() != 1 || shape.rows() != 2)
    throw file_error(shape.path(), fmt::format("shape must hold 2 integers, got {} {}", npy_type_name(shape.type()),
                                               shape.shape_text()));
  m.rows = shape.as_int64(0);
  m.cols = shape.as_int64(1);
  if (m.rows < 0 || m.cols < 0) throw file_error(shape.path(), "negative matrix shape");
  const NpyArray data = z.array(prefix + "data");
  if (data.ndim() != 1) throw file_error(data.path(), fmt::format("data must be 1-D, got {}", data.shape_text()));
  const int64_t nnz = data.rows();
  m.value.resize(static_cast<size_t>(nnz));
  for (int64_t k = 0; k < nnz; ++k) m.value[k] = static_cast<float>(data.as_double(k));
  if (format == "coo") {
    const NpyArray row = z.array(prefix + "row"), col = z.array(prefix + "col");
    m.row = integers(row, "row");
    m.col = integers(col, "col");
    if (static_cast<int64_t>(m.row.size()) != nnz || static_cast<int64_t>(m.col.size()) != nnz)
      throw file_error(m.name, fmt::format("row, col and data have {}, {} and {} entries", m.row.size(), m.col.size(),
                                           nnz));
    for (int64_t k = 0; k < nnz; ++k) {
      check_index(m.row[k], m.rows, row, k, "row");
      check_index(m.col[k], m.cols, col, k, "column");
    }
    return m;
  }
  // csr: indptr over rows, indices are columns; csc the other way round.
  const bool csr = format == "csr";
  const int64_t outer = csr ? m.rows : m.cols, inner = csr ? m.cols : m.rows;
  const NpyArray indptr_a = z.array(prefix + "indptr"), indices_a = z.array(prefix + "indices");
  const std::vector<int64_t> indptr = integers(indptr_a, "indptr");
  std::vector<int64_t> indices = integers(indices_a, "indices");
  if (static_cast<int64_t>(indptr.size()) != outer + 1)
    throw file_error(indptr_a.path(), fmt::format("indptr has {} entries, a {} {} x {} matrix needs {}", indptr.size(),
                                                  format, m.rows, m.cols, outer + 1));
  if (static_cast<int64_t>(indices.size()) != nnz)
    throw file_error(indices_a.path(), fmt::format("indices has {} entries but data has {}", indices.size(), nnz));
  if (indptr[0] != 0 || indptr[outer] != nnz)
    throw file_error(indptr_a.path(), fmt::format("indptr runs from {} to {}, expected 0 to {}", indptr[0],
                                                  indptr[outer], nnz));
  std::vector<int64_t> outer_of(static_cast<size_t>(nnz));
  for (int64_t r = 0; r < outer; ++r) {
    if (indptr[r + 1] < indptr[r])
      throw offset_error(indptr_a.path(), indptr_a.offset_of(r + 1), fmt::format("indptr decreases at {}", r + 1));
    for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k) outer_of[k] = r;
  }
  for (int64_t k = 0; k < nnz; ++k) check_index(indices[k], inner, indices_a, k, csr ? "column" : "row");
  m.row = csr ? std::move(outer_of) : std::move(indices);
  m.col = csr ? std::move(indices) : std::move(outer_of);
  return m;
}

RawEdges sparse_to_edges(const SparseEntries& m, int64_t& num_vertices) {
  if (m.rows != m.cols)
    throw file_error(m.name, fmt::format("the adjacency matrix is {} x {}; it must be square", m.rows, m.cols));
  num_vertices = m.rows;
  RawEdges e;
  e.src.assign(m.row.begin(), m.row.end());
  e.dst.assign(m.col.begin(), m.col.end());
  bool all_one = true;
  for (float w : m.value) all_one = all_one && w == 1.0f;
  if (!all_one) e.weight = m.value;
  return e;
}

void sparse_to_features(const SparseEntries& m, VertexData& out) {
  if (m.cols > std::numeric_limits<int32_t>::max())
    throw file_error(m.name, fmt::format("{} attribute columns are too many", m.cols));
  if (out.rows >= 0 && out.rows != m.rows)
    throw file_error(m.name, fmt::format("the attribute matrix has {} rows but {} has {}", m.rows, out.rows_source,
                                         out.rows));
  out.rows = m.rows;
  if (out.rows_source.empty()) out.rows_source = m.name;
  out.feature_dim = static_cast<int32_t>(m.cols);
  out.features.assign(static_cast<size_t>(m.rows * m.cols), 0.0f);
  for (size_t k = 0; k < m.value.size(); ++k) out.features[m.row[k] * m.cols + m.col[k]] += m.value[k];
}

}  // namespace ht::data
