#include "datasets/label_split.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"

namespace ht::data {
namespace {

const char* split_name(Split s) {
  switch (s) {
    case Split::train: return "train";
    case Split::val: return "validation";
    case Split::test: return "test";
    default: return "none";
  }
}

}  // namespace

void set_labels(std::span<const double> values, const std::string& source, const PositionText& where,
                VertexData& out) {
  const int64_t n = static_cast<int64_t>(values.size());
  out.labels.resize(static_cast<size_t>(n));
  int64_t max_label = -1;
  for (int64_t v = 0; v < n; ++v) {
    const double x = values[v];
    if (std::isnan(x)) {
      out.labels[v] = -1;
      continue;
    }
    if (std::floor(x) != x || x < -1 || x >= static_cast<double>(kMaxVertices32))
      throw file_error(source, fmt::format("{}: label {} of vertex {} is not a class id (integers >= 0; NaN or -1 "
                                           "mark an unlabeled vertex)",
                                           where(v), x, v));
    out.labels[v] = static_cast<int32_t>(x);
    max_label = std::max(max_label, static_cast<int64_t>(x));
  }
  out.num_classes = static_cast<int32_t>(max_label + 1);
}

void add_split_ids(std::span<const int64_t> ids, Split code, const std::string& source, const PositionText& where,
                   std::vector<uint8_t>& split) {
  const int64_t n = static_cast<int64_t>(split.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t v = ids[i];
    if (v < 0 || v >= n)
      throw file_error(source, fmt::format("{}: vertex id {} is outside 0..{}", where(static_cast<int64_t>(i)), v, n - 1));
    if (split[v] != static_cast<uint8_t>(Split::none))
      throw file_error(source, fmt::format("{}: vertex {} is already in the {} set", where(static_cast<int64_t>(i)), v,
                                           split_name(static_cast<Split>(split[v]))));
    split[v] = static_cast<uint8_t>(code);
  }
}

void add_split_mask(std::span<const uint8_t> mask, Split code, const std::string& source, const PositionText& where,
                    std::vector<uint8_t>& split) {
  if (mask.size() != split.size())
    throw file_error(source, fmt::format("the mask has {} entries for {} vertices", mask.size(), split.size()));
  for (size_t v = 0; v < mask.size(); ++v) {
    if (!mask[v]) continue;
    if (split[v] != static_cast<uint8_t>(Split::none))
      throw file_error(source, fmt::format("{}: vertex {} is in the {} mask too", where(static_cast<int64_t>(v)), v,
                                           split_name(static_cast<Split>(split[v]))));
    split[v] = static_cast<uint8_t>(code);
  }
}

std::string split_counts_text(std::span<const uint8_t> split) {
  int64_t c[4] = {0, 0, 0, 0};
  for (uint8_t s : split) ++c[std::min<uint8_t>(s, 3)];
  return fmt::format("train {} / val {} / test {}", c[1], c[2], c[3]);
}

}  // namespace ht::data
