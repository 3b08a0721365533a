#include "datasets/script_outputs.hpp"

#include "datasets/npy_edges.hpp"
#include "datasets/vertex_arrays.hpp"

namespace ht::data {

RawGraph read_script_outputs(const std::string& dir) {
  RawGraph g;
  VertexArrayPaths p;
  p.features = dir + "/features.npy";
  p.labels = dir + "/labels.npy";
  p.split = dir + "/split.npy";
  load_vertex_arrays(p, g.data);
  g.num_vertices = g.data.rows;
  g.edges = read_npy_edges(dir + "/edges.npy", g.num_vertices);
  return g;
}

}  // namespace ht::data
