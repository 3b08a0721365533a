#include "datasets/ogb_reader.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/label_split.hpp"
#include "datasets/npy_edges.hpp"
#include "datasets/npz.hpp"
#include "datasets/numeric_csv.hpp"
#include "datasets/vertex_arrays.hpp"
#include "graph/types.hpp"

namespace ht::data {
namespace fs = std::filesystem;
namespace {

// dir/stem.csv.gz, else dir/stem.csv; "" when neither exists.
std::string find_csv(const fs::path& dir, const std::string& stem) {
  for (const char* ext : {".csv.gz", ".csv"}) {
    const fs::path p = dir / (stem + ext);
    if (fs::is_regular_file(p)) return p.string();
  }
  return "";
}

PositionText line_of() {
  return [](int64_t i) { return fmt::format("line {}", i + 1); };
}

// Sets N, or checks it against what fixed it before.
void claim_vertices(RawGraph& g, int64_t n, const std::string& source, std::string& n_source) {
  if (g.num_vertices < 0) {
    g.num_vertices = n;
    n_source = source;
  } else if (n != g.num_vertices) {
    throw file_error(source, fmt::format("has {} vertex rows but {} gives N = {}", n, n_source, g.num_vertices));
  }
}

void read_split(const fs::path& root, const std::string& wanted, RawGraph& g) {
  const std::vector<std::string> names = ogb_split_names(root.string());
  if (names.empty()) {
    log::warn("{}: no split/<name>/ folder: the graph has no train/validation/test split", root.string());
    return;
  }
  std::string name = wanted.empty() ? names.front() : wanted;
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw option_error("--split-name", fmt::format("'{}' is not a folder of {} (there: {})", name,
                                                   (root / "split").string(), fmt::join(names, ", ")));
  if (wanted.empty() && names.size() > 1)
    log::info("{}: split '{}' (others: {}; pick one with --split-name)", root.string(), name,
              fmt::join(std::vector<std::string>(names.begin() + 1, names.end()), ", "));
  const fs::path dir = root / "split" / name;
  g.data.split.assign(static_cast<size_t>(g.num_vertices), static_cast<uint8_t>(Split::none));
  const std::pair<const char*, Split> parts[] = {{"train", Split::train}, {"valid", Split::val}, {"test", Split::test}};
  for (const auto& [stem, code] : parts) {
    const std::string path = find_csv(dir, stem);
    if (path.empty()) throw file_error((dir / (std::string(stem) + ".csv.gz")).string(), "file not found");
    const CsvNumbers<int64_t> ids = read_csv_integers(path, "vertex ids");
    if (ids.cols > 1) throw file_error(path, fmt::format("{} columns, expected one vertex id per line", ids.cols));
    add_split_ids(ids.values, code, path, line_of(), g.data.split);
  }
  log::info("{}: split '{}': {}", root.string(), name, split_counts_text(g.data.split));
}

RawGraph read_csv_layout(const fs::path& root) {
  const fs::path raw = root / "raw";
  RawGraph g;
  std::string n_source;
  if (const std::string p = find_csv(raw, "num-node-list"); !p.empty()) {
    const CsvNumbers<int64_t> n = read_csv_integers(p, "vertex count");
    if (n.values.size() != 1 || n.values[0] < 0)
      throw file_error(p, fmt::format("expected one vertex count (a single graph), got {} values", n.values.size()));
    claim_vertices(g, n.values[0], p, n_source);
  }
  if (const std::string p = find_csv(raw, "node-feat"); !p.empty()) {
    CsvNumbers<float> x = read_csv_floats(p, "node features");
    claim_vertices(g, x.rows, p, n_source);
    if (x.cols > kMaxVertices32) throw file_error(p, fmt::format("{} feature columns are too many", x.cols));
    g.data.feature_dim = static_cast<int32_t>(x.cols);
    g.data.features = std::move(x.values);
  }
  if (const std::string p = find_csv(raw, "node-label"); !p.empty()) {
    const CsvNumbers<double> y = read_csv_doubles(p, "node labels");
    if (y.cols > 1)
      throw file_error(p, fmt::format("{} label columns: multi-label targets (ogbn-proteins) are not supported", y.cols));
    claim_vertices(g, y.rows, p, n_source);
    set_labels(y.values, p, line_of(), g.data);
  }
  const std::string edge_path = find_csv(raw, "edge");
  if (edge_path.empty()) throw file_error((raw / "edge.csv.gz").string(), "file not found (and no raw/data.npz)");
  const CsvNumbers<int64_t> e = read_csv_integers(edge_path, "edges");
  if (e.rows > 0 && e.cols != 2)
    throw file_error(edge_path, fmt::format("{} columns, expected 2 (source, destination)", e.cols));
  if (g.num_vertices < 0) {
    int64_t hi = -1;
    for (int64_t v : e.values) hi = std::max(hi, v);
    g.num_vertices = hi + 1;
    n_source = edge_path;
  }
  g.edges.src.resize(static_cast<size_t>(e.rows));
  g.edges.dst.resize(static_cast<size_t>(e.rows));
  for (int64_t i = 0; i < e.rows; ++i) {
    const int64_t s = e.values[2 * i], d = e.values[2 * i + 1];
    if (s < 0 || s >= g.num_vertices || d < 0 || d >= g.num_vertices)
      throw line_error(edge_path, i + 1, fmt::format("edge {} -> {} has an id outside 0..{} (N from {})", s, d,
                                                     g.num_vertices - 1, n_source));
    g.edges.src[i] = static_cast<uint64_t>(s);
    g.edges.dst[i] = static_cast<uint64_t>(d);
  }
  return g;
}

RawGraph read_npz_layout(const fs::path& root) {
  const fs::path raw = root / "raw";
  const NpzArchive z((raw / "data.npz").string());
  RawGraph g;
  std::string n_source;
  if (z.has("num_nodes_list")) {
    const NpyArray n = z.array("num_nodes_list");
    if (!n.is_integral() || n.count() != 1)
      throw file_error(n.path(), fmt::format("expected one vertex count (a single graph), got {} {}",
                                             npy_type_name(n.type()), n.shape_text()));
    claim_vertices(g, n.as_int64(0), n.path(), n_source);
  }
  if (z.has("node_feat")) {
    const NpyArray x = z.array("node_feat");
    if (x.ndim() != 2) throw file_error(x.path(), fmt::format("node_feat must have shape (N, F), got {}", x.shape_text()));
    claim_vertices(g, x.rows(), x.path(), n_source);
    load_features(x, g.data);
  }
  const std::string label_path = (raw / "node-label.npz").string();
  if (fs::is_regular_file(label_path)) {
    const NpzArchive lz(label_path);
    const NpyArray y = lz.array("node_label");
    if (y.ndim() == 2 && y.cols() != 1)
      throw file_error(y.path(), fmt::format("node_label must have shape (N,) or (N, 1), got {}", y.shape_text()));
    claim_vertices(g, y.rows(), y.path(), n_source);
    std::vector<double> values(static_cast<size_t>(y.rows()));
    for (int64_t i = 0; i < y.rows(); ++i) values[i] = y.as_double(i);
    set_labels(values, y.path(), [&y](int64_t i) { return fmt::format("index {} (byte {})", i, y.offset_of(i)); },
               g.data);
  }
  const NpyArray e = z.array("edge_index");
  if (g.num_vertices < 0) g.num_vertices = npy_edges_vertex_count(e, EdgeArrayShape::index);
  g.edges = read_npy_edges(e, g.num_vertices, EdgeArrayShape::index);
  return g;
}

}  // namespace

std::vector<std::string> ogb_split_names(const std::string& dir) {
  std::vector<std::string> names;
  const fs::path split = fs::path(dir) / "split";
  if (!fs::is_directory(split)) return names;
  for (const auto& entry : fs::directory_iterator(split))
    if (entry.is_directory()) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

RawGraph read_ogb(const OgbOptions& o) {
  const fs::path root(o.dir);
  if (!fs::is_directory(root / "raw"))
    throw file_error(o.dir, "no raw/ folder: --format ogb reads an OGB dataset folder (raw/edge.csv.gz or "
                            "raw/data.npz, split/<name>/)");
  const bool binary = fs::is_regular_file(root / "raw" / "data.npz");
  RawGraph g = binary ? read_npz_layout(root) : read_csv_layout(root);
  read_split(root, o.split_name, g);
  log::info("{} (OGB, {}): N = {}, {} edges, F = {}, {} classes", o.dir, binary ? "raw/data.npz" : "csv", g.num_vertices,
            g.edges.size(), g.data.feature_dim, g.data.num_classes);
  return g;
}

}  // namespace ht::data
