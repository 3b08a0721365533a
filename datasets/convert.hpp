#pragma once
// `ht-convert --format ...`: reads an input (datasets/*_reader.hpp), builds
// the graph, applies the transformations and writes the .htg file
// atomically. The CLI (apps/ht-convert.cpp) only fills ConvertOptions.
#include <cstdint>
#include <optional>
#include <string>

#include "core/timer.hpp"
#include "datasets/assemble.hpp"
#include "datasets/edge_list_reader.hpp"
#include "datasets/vertex_arrays.hpp"
#include "graph/graph_file.hpp"

namespace ht::data {

enum class InputFormat { edgelist, mtx, planetoid, facebook, npz, ogb, npy_edges };
// `automatic` = the format's default (planetoid: drop; others: keep).
enum class SelfLoopChoice { automatic, keep, drop, add };

// What --format and --generate share: the output, the split fractions and
// seed, and the transformations (tri-states: > 0 on, < 0 off, 0 the mode's
// default).
struct SharedConvertOptions {
  std::string output;
  std::optional<double> train_fraction, val_fraction;
  uint64_t seed = 1;
  int symmetrize = 0;
  int drop_duplicates = 0;
  SelfLoopChoice self_loops = SelfLoopChoice::automatic;
  bool normalize_features = false;
  int id_bytes = 4;
  StoreDtype feature_dtype = StoreDtype::f32;  // of the features in the file (rounded once, RNE)
  bool sync = true;  // --no-sync: rename without waiting for the disk
};

struct ConvertOptions : SharedConvertOptions {
  InputFormat format = InputFormat::edgelist;
  std::string input, name;
  // Edge lists.
  HeaderMode header = HeaderMode::detect;
  int64_t num_vertices = -1;  // -1 = from the vertex arrays or the ids
  bool keep_ids = false;
  bool ignore_weights = false;
  bool allow_nonfinite = false;  // keep NaN/Inf features and weights (datasets/finite_values.hpp)
  // Vertex arrays (.npy); for planetoid/facebook/npz they replace the dataset's.
  VertexArrayPaths arrays;
  // npz.
  int split_index = 0;
  // ogb: the split/<name> folder (empty = the first).
  std::string split_name;
  // facebook (MUSAE).
  std::string target_id_column = "id", target_label_column = "page_type";
  int32_t feature_dim = 0;
};

void run_convert(const ConvertOptions& opt);

// The transformations asked for, with the mode's defaults for what was not.
TransformOptions resolve_transforms(const SharedConvertOptions& o, bool symmetrize, bool drop_duplicates,
                                    SelfLoops self_loops);

// Shared tail of every mode: transformations, flags, atomic write, summary
// line (with per-phase timings at -v and the peak memory). With `rows` not
// empty (generators), g has no features and the rows are made while the
// file is written (normalized there when asked; the topology transforms
// keep vertex ids, so rows stay where they are).
void transform_and_write(Graph&& g, const TransformOptions& t, const std::string& output,
                         const GraphWriteOptions& write, PhaseTimes& phases, const Timer& total,
                         const FeatureRows& rows = {});

// Fails early (before any parsing) when `output` cannot be created.

}  // namespace ht::data
