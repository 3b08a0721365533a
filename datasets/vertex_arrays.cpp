#include "datasets/vertex_arrays.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/npy.hpp"
#include "graph/types.hpp"

namespace ht::data {
namespace {

// Fixes N from the first array and checks every later one against it.
void claim_rows(VertexData& out, const NpyArray& a, const char* what) {
  if (out.rows < 0) {
    out.rows = a.rows();
    out.rows_source = a.path();
    return;
  }
  if (a.rows() != out.rows)
    throw file_error(a.path(), fmt::format("{} array has {} rows but {} has {}; every per-vertex array needs one "
                                           "row per vertex",
                                           what, a.rows(), out.rows_source, out.rows));
}

void require_vector(const NpyArray& a, const char* what) {
  if (a.ndim() == 2 && a.cols() != 1)
    throw file_error(a.path(), fmt::format("{} must be a 1-D array, got shape {}", what, a.shape_text()));
}

// Element i as an integer; float arrays are accepted when the value is integral.
int64_t integer_at(const NpyArray& a, int64_t i, const char* what) {
  if (a.is_integral()) return a.as_int64(i);
  const double v = a.as_double(i);
  if (!(std::floor(v) == v) || std::fabs(v) > 9e15)
    throw offset_error(a.path(), a.offset_of(i),
                       fmt::format("{} value {} at index {} is not an integer", what, v, i));
  return static_cast<int64_t>(v);
}

}  // namespace

void load_features(const NpyArray& a, VertexData& out) {
  const std::string& path = a.path();
  claim_rows(out, a, "feature");
  if (a.cols() > std::numeric_limits<int32_t>::max())
    throw file_error(path, fmt::format("{} feature columns are too many", a.cols()));
  // A [N, 0] array would make a graph without features that looks as if it had them.
  if (a.cols() < 1)
    throw file_error(path, fmt::format("the feature array {} has no columns (a [N, F] array with F >= 1 is needed)",
                                       a.shape_text()));
  out.feature_dim = static_cast<int32_t>(a.cols());
  out.features = a.to_float32();
  log::debug("{}: features {} {}", path, npy_type_name(a.type()), a.shape_text());
}

void load_labels(const NpyArray& a, int32_t num_classes, VertexData& out) {
  const std::string& path = a.path();
  require_vector(a, "labels");
  claim_rows(out, a, "label");
  out.labels.resize(a.rows());
  int64_t max_label = -1;
  for (int64_t i = 0; i < a.rows(); ++i) {
    const int64_t v = integer_at(a, i, "label");
    if (v < -1)
      throw offset_error(path, a.offset_of(i),
                         fmt::format("label {} of vertex {} is negative (-1 marks an unlabeled vertex)", v, i));
    if (num_classes > 0 && v >= num_classes)
      throw offset_error(path, a.offset_of(i),
                         fmt::format("label {} of vertex {} is out of range (--classes {})", v, i, num_classes));
    if (v >= ht::kMaxVertices32)
      throw offset_error(path, a.offset_of(i), fmt::format("label {} of vertex {} is too large", v, i));
    out.labels[i] = static_cast<int32_t>(v);
    max_label = std::max(max_label, v);
  }
  out.num_classes = num_classes > 0 ? num_classes : static_cast<int32_t>(max_label + 1);
}

namespace {

void load_split_codes(const std::string& path, VertexData& out) {
  const NpyArray a(path);
  require_vector(a, "split");
  claim_rows(out, a, "split");
  out.split.resize(a.rows());
  for (int64_t i = 0; i < a.rows(); ++i) {
    const int64_t v = integer_at(a, i, "split");
    if (v < 0 || v > 3)
      throw offset_error(path, a.offset_of(i),
                         fmt::format("split code {} of vertex {} is not 0..3 (0 none, 1 train, 2 val, 3 test)", v, i));
    out.split[i] = static_cast<uint8_t>(v);
  }
}

// Applies one boolean mask: its vertices get `code`; a vertex already in
// another mask is an error naming both files.
void apply_mask(const std::string& path, Split code, const std::string (&mask_paths)[4], VertexData& out) {
  const NpyArray a(path);
  require_vector(a, "a split mask");
  claim_rows(out, a, "mask");
  if (out.split.empty()) out.split.assign(a.rows(), static_cast<uint8_t>(Split::none));
  for (int64_t i = 0; i < a.rows(); ++i) {
    const int64_t v = integer_at(a, i, "mask");
    if (v != 0 && v != 1)
      throw offset_error(path, a.offset_of(i), fmt::format("mask value {} at index {} is not 0/1 (boolean)", v, i));
    if (!v) continue;
    if (out.split[i] != static_cast<uint8_t>(Split::none))
      throw file_error(path, fmt::format("vertex {} is also set in {}; a vertex belongs to one split at most", i,
                                         mask_paths[out.split[i]]));
    out.split[i] = static_cast<uint8_t>(code);
  }
}

}  // namespace

void load_vertex_arrays(const VertexArrayPaths& p, VertexData& out) {
  const bool masks = !p.train_mask.empty() || !p.val_mask.empty() || !p.test_mask.empty();
  if (masks && !p.split.empty())
    throw option_error("--split", "give the split either as codes (--split) or as masks (--train-mask/--val-mask/--test-mask), not both");
  if (!p.features.empty()) load_features(NpyArray(p.features), out);
  if (!p.labels.empty()) load_labels(NpyArray(p.labels), p.num_classes, out);
  if (!p.split.empty()) load_split_codes(p.split, out);
  const std::string mask_paths[4] = {"", p.train_mask, p.val_mask, p.test_mask};
  if (!p.train_mask.empty()) apply_mask(p.train_mask, Split::train, mask_paths, out);
  if (!p.val_mask.empty()) apply_mask(p.val_mask, Split::val, mask_paths, out);
  if (!p.test_mask.empty()) apply_mask(p.test_mask, Split::test, mask_paths, out);
}

void normalize_feature_row(std::span<float> row) {
  double sum = 0;
  for (float x : row) sum += x;
  if (sum == 0) return;
  const float inv = static_cast<float>(1.0 / sum);
  for (float& x : row) x *= inv;
}

void normalize_feature_rows(std::span<float> features, int32_t feature_dim) {
  const int64_t f = feature_dim;
  if (f == 0) return;
  const int64_t n = static_cast<int64_t>(features.size()) / f;
#pragma omp parallel for schedule(static)
  for (int64_t v = 0; v < n; ++v) normalize_feature_row(features.subspan(static_cast<size_t>(v * f), f));
}

}  // namespace ht::data
