#include "datasets/convert.hpp"

#include <array>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "core/memory.hpp"
#include "datasets/finite_values.hpp"
#include "datasets/graph_stats.hpp"
#include "datasets/mtx_reader.hpp"
#include "datasets/musae_reader.hpp"
#include "datasets/npy.hpp"
#include "datasets/npy_edges.hpp"
#include "datasets/npz_reader.hpp"
#include "datasets/ogb_reader.hpp"
#include "datasets/planetoid_reader.hpp"
#include "graph/features.hpp"
#include "graph/graph_file.hpp"

namespace ht::data {
namespace {

bool has_arrays(const VertexArrayPaths& p) {
  return !p.features.empty() || !p.labels.empty() || !p.split.empty() || !p.train_mask.empty() ||
         !p.val_mask.empty() || !p.test_mask.empty();
}

// Vertex count the ids must respect, and what fixed it (for messages).
void set_id_limit(int64_t n, const std::string& source, uint64_t& limit, std::string& note) {
  if (n < 0) return;
  limit = static_cast<uint64_t>(n);
  note = fmt::format("N = {} from {}", n, source);
}

RawGraph read_edge_list_input(const ConvertOptions& o) {
  RawGraph g;
  load_vertex_arrays(o.arrays, g.data);
  EdgeListOptions e;
  e.header = o.header;
  e.keep_weights = !o.ignore_weights;
  if (o.num_vertices >= 0) {
    if (g.data.rows >= 0 && g.data.rows != o.num_vertices)
      throw option_error("--num-vertices", fmt::format("{} differs from the {} rows of {}", o.num_vertices,
                                                       g.data.rows, g.data.rows_source));
    g.num_vertices = o.num_vertices;
    set_id_limit(o.num_vertices, "--num-vertices", e.id_limit, e.limit_note);
  } else {
    g.num_vertices = g.data.rows;
    set_id_limit(g.data.rows, g.data.rows_source, e.id_limit, e.limit_note);
  }
  g.edges = read_edge_list(o.input, e);
  return g;
}

RawGraph read_mtx_input(const ConvertOptions& o) {
  RawGraph g;
  load_vertex_arrays(o.arrays, g.data);
  MtxData m = read_matrix_market(o.input, !o.ignore_weights);
  if (g.data.rows >= 0 && g.data.rows != m.num_vertices)
    throw file_error(g.data.rows_source, fmt::format("has {} rows but {} is a {} x {} matrix", g.data.rows, o.input,
                                                     m.num_vertices, m.num_vertices));
  g.num_vertices = m.num_vertices;
  g.edges = std::move(m.edges);
  return g;
}

// An edge array (E, 2) or (2, E); N from the vertex arrays, else max id + 1.
RawGraph read_npy_edges_input(const ConvertOptions& o) {
  RawGraph g;
  load_vertex_arrays(o.arrays, g.data);
  const NpyArray a(o.input);
  g.num_vertices = g.data.rows >= 0 ? g.data.rows : npy_edges_vertex_count(a, EdgeArrayShape::either);
  g.edges = read_npy_edges(a, g.num_vertices, EdgeArrayShape::either);
  return g;
}

// Replaces a dataset's vertex arrays by the ones given on the command line.
void override_arrays(const VertexArrayPaths& p, const std::string& input, RawGraph& g) {
  if (!has_arrays(p)) return;
  VertexData extra;
  extra.rows = g.num_vertices;
  extra.rows_source = input;
  load_vertex_arrays(p, extra);
  if (!p.features.empty()) {
    g.data.feature_dim = extra.feature_dim;
    g.data.features = std::move(extra.features);
  }
  if (!p.labels.empty()) {
    g.data.num_classes = extra.num_classes;
    g.data.labels = std::move(extra.labels);
  }
  if (!extra.split.empty()) g.data.split = std::move(extra.split);
}

RawGraph read_input(const ConvertOptions& o) {
  switch (o.format) {
    case InputFormat::edgelist: return read_edge_list_input(o);
    case InputFormat::mtx: return read_mtx_input(o);
    case InputFormat::planetoid: {
      RawGraph g = read_planetoid(o.input, o.name);
      override_arrays(o.arrays, o.input, g);
      return g;
    }
    case InputFormat::facebook: {
      MusaeOptions m;
      m.dir = o.input;
      if (!o.name.empty()) m.name = o.name;
      m.id_column = o.target_id_column;
      m.label_column = o.target_label_column;
      m.feature_dim = o.feature_dim;
      m.train_fraction = o.train_fraction.value_or(0.1);
      m.val_fraction = o.val_fraction.value_or(0.1);
      m.seed = o.seed;
      RawGraph g = read_musae(m);
      override_arrays(o.arrays, o.input, g);
      return g;
    }
    case InputFormat::npz: {
      NpzOptions n;
      n.split_index = o.split_index;
      n.train_fraction = o.train_fraction.value_or(0.1);
      n.val_fraction = o.val_fraction.value_or(0.1);
      n.seed = o.seed;
      RawGraph g = read_npz(o.input, n);
      override_arrays(o.arrays, o.input, g);
      return g;
    }
    case InputFormat::ogb: {
      RawGraph g = read_ogb({o.input, o.split_name});
      override_arrays(o.arrays, o.input, g);
      return g;
    }
    case InputFormat::npy_edges: return read_npy_edges_input(o);
  }
  throw Error("unknown input format");
}

// Per-format defaults: Planetoid like PyG (symmetric, no duplicates, no
// self-loops); Facebook symmetrized without self-loops; undirected npz
// symmetrized; plain edge lists, Matrix Market, .npy edge arrays and OGB
// folders as given (OGB lists an undirected graph's edges once: --symmetrize).
TransformOptions transforms_for(const ConvertOptions& o) {
  const bool planetoid = o.format == InputFormat::planetoid;
  const bool facebook = o.format == InputFormat::facebook;
  const bool undirected_npz = o.format == InputFormat::npz && !npz_is_directed(o.input);
  return resolve_transforms(o, planetoid || facebook || undirected_npz, planetoid,
                            planetoid || facebook ? SelfLoops::drop : SelfLoops::keep);
}

void check_options(const ConvertOptions& o) {
  if (o.input.empty()) throw usage_error("--input", "required with --format");
  const bool folder =
      o.format == InputFormat::planetoid || o.format == InputFormat::facebook || o.format == InputFormat::ogb;
  if (!folder && !std::filesystem::exists(o.input)) throw file_error(o.input, "input file not found");
  if (folder && !std::filesystem::is_directory(o.input))
    throw file_error(o.input, "not a directory (this format reads a folder of raw files)");
  if (o.keep_ids && o.format != InputFormat::edgelist)
    throw option_error("--keep-ids", "only applies to --format edgelist (other formats never relabel)");
  if (o.num_vertices >= 0 && o.format != InputFormat::edgelist)
    throw option_error("--num-vertices", "only applies to --format edgelist");
  if (o.id_bytes != 4 && o.id_bytes != 8) throw option_error("--id-bytes", "must be 4 or 8");
}

}  // namespace

TransformOptions resolve_transforms(const SharedConvertOptions& o, bool symmetrize, bool drop_duplicates,
                                    SelfLoops self_loops) {
  TransformOptions t;
  t.symmetrize = o.symmetrize ? o.symmetrize > 0 : symmetrize;
  t.drop_duplicates = o.drop_duplicates ? o.drop_duplicates > 0 : drop_duplicates;
  switch (o.self_loops) {
    case SelfLoopChoice::automatic: t.self_loops = self_loops; break;
    case SelfLoopChoice::keep: t.self_loops = SelfLoops::keep; break;
    case SelfLoopChoice::drop: t.self_loops = SelfLoops::drop; break;
    case SelfLoopChoice::add: t.self_loops = SelfLoops::add; break;
  }
  t.normalize_features = o.normalize_features;
  return t;
}

void transform_and_write(Graph&& g, const TransformOptions& t, const std::string& output,
                         const GraphWriteOptions& write, PhaseTimes& phases, const Timer& total,
                         const FeatureRows& rows) {
  Timer timer;
  g = apply_transforms(std::move(g), t);
  FeatureRows made = rows;
  if (!made.empty() && t.normalize_features) {
    made.fill = [inner = rows.fill](int64_t v, std::span<float> row) {
      inner(v, row);
      normalize_feature_row(row);
    };
    g.flags.features_normalized = true;
  }
  if (made.empty() && write.feature_dtype && *write.feature_dtype != g.feature_dtype) {
    try {
      convert_features(g, *write.feature_dtype);  // rounded once, before anything is written
    } catch (const Error& e) {
      throw option_error("--feature-dtype", e.what());
    }
  }
  phases.add("transform", timer.seconds());
  timer.reset();
  log::info("writing {}", output);
  if (made.empty()) {
    write_graph(output, g.view(), write);
  } else {
    try {
      write_graph_streamed(output, g.view(), made, write);  // rounded once per row as written
    } catch (const Error& e) {
      if (!write.feature_dtype || *write.feature_dtype == StoreDtype::f32) throw;
      throw option_error("--feature-dtype", e.what());
    }
  }
  phases.add("write", timer.seconds());
  for (const auto& [name, seconds] : phases.phases()) log::debug("phase {:<10} {:8.3f} s", name, seconds);
  int64_t counts[4] = {0, 0, 0, 0};
  for (uint8_t c : g.split) ++counts[std::min<uint8_t>(c, 3)];
  const std::string split =
      g.split.empty() ? "no split" : fmt::format("split {}/{}/{}", counts[1], counts[2], counts[3]);
  const int32_t dim = made.empty() ? g.feature_dim : made.dim;
  const StoreDtype dtype = made.empty() ? g.feature_dtype : write.feature_dtype.value_or(StoreDtype::f32);
  const std::string f =
      fmt::format("{}{}", dim, dtype != StoreDtype::f32 && dim > 0 ? fmt::format(" ({})", dtype_name(dtype)) : "");
  log::info("wrote {}: N = {}, E = {}, F = {}, C = {}, {}{}{} in {:.2f} s, peak memory {}", output, g.num_vertices,
            g.num_edges(), f, g.num_classes, split, g.flags.symmetric ? ", symmetric" : "",
            g.flags.has_self_loops ? ", self-loops" : "", total.seconds(),
            format_bytes(static_cast<double>(peak_rss_bytes())));
}

void run_convert(const ConvertOptions& o) {
  const Timer total;
  check_options(o);
  const VertexArrayPaths& a = o.arrays;
  check_output_path(o.output, "--output",
                    std::array{o.input, a.features, a.labels, a.split, a.train_mask, a.val_mask, a.test_mask});
  PhaseTimes phases;
  Timer timer;
  RawGraph raw = read_input(o);
  phases.add("read", timer.seconds());
  timer.reset();
  Graph g = assemble_graph(std::move(raw), o.keep_ids, o.input);
  if (!o.allow_nonfinite)
    check_finite_values(g, o.arrays.features.empty() ? o.input : o.arrays.features, o.input);
  phases.add("build", timer.seconds());
  transform_and_write(std::move(g), transforms_for(o), o.output, {o.id_bytes, o.feature_dtype, o.sync}, phases, total);
}

}  // namespace ht::data
