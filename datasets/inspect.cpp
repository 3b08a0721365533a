#include "datasets/inspect.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/json.hpp"
#include "datasets/graph_stats.hpp"
#include "graph/graph_file.hpp"

namespace ht::data {
namespace {

// A flag that is set must hold; a flag that is clear only forgoes a promise.
void check_flags(const GraphFile& f, const GraphStats& s) {
  const GraphFlags& h = f.view().flags;
  auto fail = [&](const char* flag, const char* why) {
    throw file_error(f.path(), fmt::format("header flag '{}' is set but {}", flag, why));
  };
  if (h.symmetric && !s.symmetric) fail("symmetric", "the edges are not symmetric");
  if (h.no_duplicates && s.duplicate_edges > 0) fail("no_duplicates", "the file has duplicate edges");
  if (h.sorted_neighbors && !s.sorted_neighbors) fail("sorted", "some in-lists are not sorted");
  if (!h.has_self_loops && s.self_loops > 0) fail("has_self_loops (clear)", "the file has self-loops");
}

void degree_json(JsonWriter& j, const char* key, const DegreeStats& d) {
  j.key(key).begin_object().field("min", d.min).field("mean", d.mean).field("max", d.max).end_object();
}

std::string to_json(const GraphFile& f, const GraphStats& s, bool verified) {
  const GraphFlags& h = f.view().flags;
  JsonWriter j;
  j.begin_object();
  j.field("file", f.path()).field("bytes", f.identity().bytes);
  j.field("header_checksum", fmt::format("{:016x}", f.identity().checksum));
  j.field("checksums_verified", verified).field("id_bytes", f.id_bytes());
  j.field("num_vertices", s.num_vertices).field("num_edges", s.num_edges);
  degree_json(j, "in_degree", s.in_degree);
  degree_json(j, "out_degree", s.out_degree);
  j.field("self_loops", s.self_loops).field("symmetric", s.symmetric).field("duplicate_edges", s.duplicate_edges);
  j.field("isolated_vertices", s.isolated_vertices).field("weighted", s.weighted);
  j.field("feature_dim", s.feature_dim).field("feature_dtype", std::string(dtype_name(s.feature_dtype)));
  j.field("feature_nonzeros", s.feature_nonzeros);
  j.field("num_classes", s.num_classes).field("has_labels", s.has_labels);
  j.key("class_counts").begin_array();
  for (int64_t c : s.class_counts) j.value(c);
  j.end_array();
  j.field("unlabeled", s.unlabeled);
  j.key("split");
  if (s.has_split) {
    j.begin_object().field("train", s.split_counts[1]).field("val", s.split_counts[2]);
    j.field("test", s.split_counts[3]).field("none", s.split_counts[0]).end_object();
  } else {
    j.null();
  }
  j.field("has_orig_ids", s.has_orig_ids);
  j.key("flags").begin_object().field("symmetric", h.symmetric).field("has_self_loops", h.has_self_loops);
  j.field("sorted_neighbors", h.sorted_neighbors).field("no_duplicates", h.no_duplicates);
  j.field("features_normalized", h.features_normalized).end_object();
  j.end_object();
  return j.str() + "\n";
}

std::string to_text(const GraphFile& f, const GraphStats& s, bool verified) {
  const GraphFlags& h = f.view().flags;
  std::string flags;
  auto add = [&](bool on, const char* name) {
    if (on) flags += (flags.empty() ? "" : ", ") + std::string(name);
  };
  add(h.symmetric, "symmetric");
  add(h.has_self_loops, "self-loops");
  add(h.sorted_neighbors, "sorted");
  add(h.no_duplicates, "no-duplicates");
  add(h.features_normalized, "features-normalized");
  std::string t = fmt::format("{}: valid hongtu graph file ({} bytes, {}-bit ids, checksums {})\n", f.path(),
                              f.identity().bytes, 8 * f.id_bytes(), verified ? "verified" : "not verified");
  t += stats_text(s);
  t += fmt::format("  {:<20} {}\n", "header flags", flags.empty() ? "none" : flags);
  return t;
}

}  // namespace

std::string inspect_graph_file(const InspectOptions& opt) {
  const GraphFile file(opt.path, ReadOptions{opt.verify_checksums});
  const GraphStats stats = compute_stats(file.view());
  check_flags(file, stats);
  return opt.json ? to_json(file, stats, opt.verify_checksums) : to_text(file, stats, opt.verify_checksums);
}

}  // namespace ht::data
