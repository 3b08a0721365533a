#pragma once
// Graph file (.htg): reader with full validation over a memory map, and an
// atomic writer. Layout: docs/FORMATS.md, "Graph file".
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/container.hpp"
#include "graph/feature_rows.hpp"
#include "graph/graph.hpp"

namespace ht {

inline constexpr char kGraphMagic[9] = "HTGRAPH\0";
inline constexpr uint32_t kGraphVersion = 1;

// Meta slots of the graph header.
enum GraphMeta : int { kMetaN = 0, kMetaE = 1, kMetaIdBytes = 2, kMetaFeatureDim = 3, kMetaNumClasses = 4 };

// Flag bits of the graph header.
enum GraphFlagBits : uint64_t {
  kFlagSymmetric = 1u << 0,
  kFlagSelfLoops = 1u << 1,
  kFlagSorted = 1u << 2,
  kFlagNoDuplicates = 1u << 3,
  kFlagFeaturesNormalized = 1u << 4,
};

struct GraphWriteOptions {
  int id_bytes = 4;  // 4 or 8 (8 is forced when N >= 2^31)
  // Feature dtype of the file; unset = the view's (fp32 features are rounded
  // once to nearest even, graph/features.hpp; values beyond the dtype's range
  // are refused).
  std::optional<StoreDtype> feature_dtype = std::nullopt;
  // False: renamed into place without waiting for the disk (ht-convert
  // --no-sync; AtomicFile::set_sync).
  bool sync = true;
};

// Section dtype of a feature dtype, and back.
DType section_dtype(StoreDtype t);

void write_graph(const std::string& path, const GraphView& g, GraphWriteOptions opt = {});
// The same file, with the features made by `features` while their section is
// written (generators: the N x F matrix never exists in memory, and rows are
// made, hashed and written in parallel); `g` must have no features. The
// file's feature dtype is opt.feature_dtype, else fp32.
void write_graph_streamed(const std::string& path, const GraphView& g, const FeatureRows& features,
                          GraphWriteOptions opt = {});

// An opened graph file; the view points into the memory map (or, for files
// with 64-bit ids, into a narrowed copy of the ids). 16-bit features stay in
// the map as they are (GraphView::features16).
class GraphFile {
 public:
  explicit GraphFile(const std::string& path, ReadOptions opt = {});
  const GraphView& view() const { return view_; }
  FileIdentity identity() const { return reader_.identity(); }
  const std::string& path() const { return reader_.path(); }
  int id_bytes() const { return id_bytes_; }
  // The file's pages leave the process's RSS once they have been read (the
  // view stays valid: a later read faults them in again). Large runs call
  // these behind each step that reads the file, so that a graph several
  // times the size of the training's own memory is never resident at once.
  void drop_pages() const noexcept { reader_.drop_all_pages(); }
  void drop_feature_rows(int64_t begin, int64_t end) const noexcept;

 private:
  void validate_topology() const;
  void validate_vertex_data() const;
  ContainerReader reader_;
  GraphView view_;
  std::vector<vid_t> narrowed_ids_;
  int id_bytes_ = 4;
};

}  // namespace ht
