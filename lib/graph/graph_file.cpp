#include "graph/graph_file.hpp"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "core/bulk_memory.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "graph/features.hpp"

namespace ht {

DType section_dtype(StoreDtype t) {
  return t == StoreDtype::f32 ? DType::f32 : (t == StoreDtype::bf16 ? DType::bf16 : DType::f16);
}

namespace {

// The features section in dtype `t`: the view's bytes as they are when the
// dtypes agree, else converted (rounded once from fp32; 16-bit to another
// dtype is widened first).
void add_features(ContainerWriter& w, const GraphView& g, StoreDtype t) {
  const int64_t n = g.num_vertices;
  const int64_t values = static_cast<int64_t>(g.feature_bytes().size()) / dtype_bytes(g.feature_dtype);
  HT_CHECK(g.feature_dim > 0 && values == n * g.feature_dim, "features have {} values for {} vertices x {} columns",
           values, n, g.feature_dim);
  const auto rows = static_cast<uint64_t>(n), cols = static_cast<uint64_t>(g.feature_dim);
  if (t == g.feature_dtype) {
    w.add_section("features", section_dtype(t), rows, cols, g.feature_bytes().data(), 2);
    return;
  }
  std::vector<float> wide;
  std::span<const float> x = g.features;
  if (g.feature_dtype != StoreDtype::f32) x = wide = widen_features(g);
  if (t == StoreDtype::f32) {
    w.add<float>("features", x, cols);
    return;
  }
  const std::vector<uint16_t> h = narrow_features(x, g.feature_dim, t, g.orig_ids);
  w.add_section("features", section_dtype(t), rows, cols, h.data(), 2);
}

// -v laps of a written file: its large sections (wall time and where the
// threads' time went) and the commit, whose fsync waits for the disk.
void log_write_times(const ContainerWriter& w) {
  if (!log::enabled(log::Level::debug)) return;
  for (const SectionWriteTime& t : w.write_times()) {
    if (t.bytes < (uint64_t{64} << 20)) continue;
    log::debug("write {}: {} in {:.2f} s ({:.2f} GB/s, {}; thread-seconds: fill {:.1f}, hash {:.1f}, store {:.1f}, "
               "writeback {:.1f})",
               t.name, format_bytes(static_cast<double>(t.bytes)), t.seconds,
               static_cast<double>(t.bytes) / 1e9 / std::max(t.seconds, 1e-9), t.mapped ? "mapped" : "pwrite",
               t.fill_seconds, t.hash_seconds, t.store_seconds, t.writeback_seconds);
  }
  log::debug("write: commit ({}rename) {:.2f} s", w.sync() ? "fsync, " : "", w.commit_seconds());
}

// The sections of g in the order of every graph file; `features` (when not
// empty) stands in for g's own.
void write_graph_sections(const std::string& path, const GraphView& g, const FeatureRows* features,
                          GraphWriteOptions opt) {
  const int64_t n = g.num_vertices, e = g.num_edges;
  HT_CHECK(static_cast<int64_t>(g.offsets.size()) == n + 1, "graph offsets have {} entries for {} vertices",
           g.offsets.size(), n);
  HT_CHECK(static_cast<int64_t>(g.sources.size()) == e, "graph has {} sources for {} edges", g.sources.size(), e);
  const int id_bytes = n > kMaxVertices32 ? 8 : opt.id_bytes;
  HT_CHECK(id_bytes == 4 || id_bytes == 8, "id width must be 4 or 8 bytes");
  const bool streamed = features != nullptr && !features->empty();
  HT_CHECK(!streamed || !g.has_features(), "graph has features of its own and generated ones");
  ContainerWriter w(path, kGraphMagic, kGraphVersion);
  w.set_sync(opt.sync);
  w.set_meta(kMetaN, static_cast<uint64_t>(n));
  w.set_meta(kMetaE, static_cast<uint64_t>(e));
  w.set_meta(kMetaIdBytes, static_cast<uint64_t>(id_bytes));
  w.set_meta(kMetaFeatureDim, static_cast<uint64_t>(streamed ? features->dim : g.feature_dim));
  w.set_meta(kMetaNumClasses, static_cast<uint64_t>(g.num_classes));
  uint64_t flags = 0;
  if (g.flags.symmetric) flags |= kFlagSymmetric;
  if (g.flags.has_self_loops) flags |= kFlagSelfLoops;
  if (g.flags.sorted_neighbors) flags |= kFlagSorted;
  if (g.flags.no_duplicates) flags |= kFlagNoDuplicates;
  if (g.flags.features_normalized) flags |= kFlagFeaturesNormalized;
  w.set_flags(flags);
  w.add<int64_t>("csc_offsets", g.offsets);
  if (id_bytes == 4) {
    w.add<vid_t>("csc_sources", g.sources);
  } else {
    std::vector<uint64_t> wide;
    resize_for_overwrite(wide, g.sources.size());
    parallel_blocks(e, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) wide[i] = g.sources[i];
    });
    w.add<uint64_t>("csc_sources", wide);
  }
  if (!g.weights.empty()) w.add<float>("edge_weights", g.weights);
  if (streamed) {
    const StoreDtype t = opt.feature_dtype.value_or(StoreDtype::f32);
    w.add_section_filled("features", section_dtype(t), static_cast<uint64_t>(n), static_cast<uint64_t>(features->dim),
                         2, [&](uint64_t offset, std::span<std::byte> out) {
                           fill_feature_bytes(*features, t, offset, out);
                         });
  } else if (g.has_features()) {
    add_features(w, g, opt.feature_dtype.value_or(g.feature_dtype));
  }
  if (!g.labels.empty()) w.add<int32_t>("labels", g.labels);
  if (!g.split.empty()) w.add<uint8_t>("split", g.split);
  if (!g.orig_ids.empty()) w.add<int64_t>("orig_ids", g.orig_ids);
  w.commit();
  log_write_times(w);
}

}  // namespace

void write_graph(const std::string& path, const GraphView& g, GraphWriteOptions opt) {
  write_graph_sections(path, g, nullptr, opt);
}

void write_graph_streamed(const std::string& path, const GraphView& g, const FeatureRows& features,
                          GraphWriteOptions opt) {
  write_graph_sections(path, g, &features, opt);
}

GraphFile::GraphFile(const std::string& path, ReadOptions opt)
    : reader_(path, kGraphMagic, kGraphVersion, opt) {
  const uint64_t n = reader_.meta(kMetaN), e = reader_.meta(kMetaE);
  id_bytes_ = static_cast<int>(reader_.meta(kMetaIdBytes));
  if (id_bytes_ != 4 && id_bytes_ != 8) reader_.fail_in("csc_sources", "header id width must be 4 or 8");
  if (n > static_cast<uint64_t>(kMaxVertices32))
    throw file_error(path, fmt::format("{} vertices: graphs with 2^31 or more vertices are not supported by "
                                       "this build (32-bit in-memory ids)",
                                       n));
  if (id_bytes_ == 4 && n > static_cast<uint64_t>(kMaxVertices32))
    reader_.fail_in("csc_sources", "32-bit ids cannot address this many vertices");
  view_.num_vertices = static_cast<int64_t>(n);
  view_.num_edges = static_cast<int64_t>(e);
  view_.offsets = reader_.array<int64_t>("csc_offsets", n + 1);
  if (id_bytes_ == 4) {
    view_.sources = reader_.array<vid_t>("csc_sources", e);
  } else {
    auto wide = reader_.array<uint64_t>("csc_sources", e);
    resize_for_overwrite(narrowed_ids_, wide.size());
    std::atomic<bool> bad{false};
#pragma omp parallel for
    for (int64_t i = 0; i < static_cast<int64_t>(wide.size()); ++i) {
      if (wide[i] >= n) bad = true;
      narrowed_ids_[i] = static_cast<vid_t>(wide[i]);
    }
    if (bad) reader_.fail_in("csc_sources", "source id out of range");
    view_.sources = narrowed_ids_;
  }
  if (reader_.has("edge_weights")) view_.weights = reader_.array<float>("edge_weights", e);
  view_.feature_dim = static_cast<int32_t>(reader_.meta(kMetaFeatureDim));
  view_.num_classes = static_cast<int32_t>(reader_.meta(kMetaNumClasses));
  if (reader_.has("features")) {
    const SectionInfo& s = reader_.section("features");
    if (s.ndim != 2 || s.shape[1] != static_cast<uint64_t>(view_.feature_dim) || s.shape[0] != n)
      reader_.fail_in("features", fmt::format("shape must be [{}, {}]", n, view_.feature_dim));
    switch (s.dtype) {
      case DType::f32: view_.features = reader_.array<float>("features"); break;
      case DType::bf16:
      case DType::f16: {
        view_.feature_dtype = s.dtype == DType::bf16 ? StoreDtype::bf16 : StoreDtype::f16;
        const std::span<const std::byte> b = reader_.bytes("features", s.dtype);
        view_.features16 = {reinterpret_cast<const uint16_t*>(b.data()), b.size() / 2};
        break;
      }
      default:
        reader_.fail_in("features", fmt::format("dtype {}: features must be f32, bf16 or f16", dtype_name(s.dtype)));
    }
  }
  if (reader_.has("labels")) view_.labels = reader_.array<int32_t>("labels", n);
  if (reader_.has("split")) view_.split = reader_.array<uint8_t>("split", n);
  if (reader_.has("orig_ids")) view_.orig_ids = reader_.array<int64_t>("orig_ids", n);
  const uint64_t f = reader_.flags();
  view_.flags.symmetric = f & kFlagSymmetric;
  view_.flags.has_self_loops = f & kFlagSelfLoops;
  view_.flags.sorted_neighbors = f & kFlagSorted;
  view_.flags.no_duplicates = f & kFlagNoDuplicates;
  view_.flags.features_normalized = f & kFlagFeaturesNormalized;
  validate_topology();
  validate_vertex_data();
}

void GraphFile::drop_feature_rows(int64_t begin, int64_t end) const noexcept {
  const std::span<const std::byte> f = view_.feature_bytes();
  if (end <= begin || f.empty()) return;
  const size_t row = f.size() / static_cast<size_t>(view_.num_vertices);
  reader_.drop_pages(f.data() + static_cast<size_t>(begin) * row, static_cast<size_t>(end - begin) * row);
}

void GraphFile::validate_topology() const {
  const auto& off = view_.offsets;
  const int64_t n = view_.num_vertices;
  if (off[0] != 0) reader_.fail_in("csc_offsets", "first offset must be 0");
  if (off[n] != view_.num_edges)
    reader_.fail_in("csc_offsets", fmt::format("last offset {} differs from the edge count {}", off[n],
                                               view_.num_edges));
  int64_t bad_offset = -1;
#pragma omp parallel for reduction(max : bad_offset)
  for (int64_t v = 0; v < n; ++v)
    if (off[v + 1] < off[v]) bad_offset = std::max(bad_offset, v);
  if (bad_offset >= 0)
    reader_.fail_in("csc_offsets", fmt::format("offsets decrease at vertex {}", bad_offset));
  int64_t bad_edge = -1;
  const auto& src = view_.sources;
#pragma omp parallel for reduction(max : bad_edge)
  for (int64_t i = 0; i < view_.num_edges; ++i)
    if (static_cast<int64_t>(src[i]) >= n) bad_edge = std::max(bad_edge, i);
  if (bad_edge >= 0)
    reader_.fail_in("csc_sources",
                    fmt::format("source id {} of edge {} is out of range (N = {})", src[bad_edge], bad_edge, n));
}

void GraphFile::validate_vertex_data() const {
  const int32_t c = view_.num_classes;
  if (!view_.labels.empty()) {
    int64_t bad = -1;
#pragma omp parallel for reduction(max : bad)
    for (int64_t v = 0; v < view_.num_vertices; ++v)
      if (view_.labels[v] < -1 || view_.labels[v] >= c) bad = std::max(bad, v);
    if (bad >= 0)
      reader_.fail_in("labels", fmt::format("label {} of vertex {} is outside [-1, {})", view_.labels[bad], bad, c));
  }
  if (!view_.split.empty()) {
    int64_t bad = -1;
#pragma omp parallel for reduction(max : bad)
    for (int64_t v = 0; v < view_.num_vertices; ++v)
      if (view_.split[v] > 3) bad = std::max(bad, v);
    if (bad >= 0) reader_.fail_in("split", fmt::format("split code {} of vertex {} is not 0..3", view_.split[bad], bad));
  }
}

}  // namespace ht
