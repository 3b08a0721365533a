#pragma once
// Synthetic graph generators. Deterministic for a given seed, independent of
// the thread count (block-seeded counter-based RNG). Multithreaded (OpenMP).
#include <cstdint>

#include "graph/graph.hpp"

namespace ht::gen {

// Vertex data attached to a generated topology.
struct VertexDataParams {
  int32_t feature_dim = 0;      // 0 = no features
  int32_t num_classes = 0;      // 0 = no labels
  double train_fraction = 0.25; // split fractions (rest = test)
  double val_fraction = 0.25;
};

// Uniform random directed multigraph G(n, m): m edges, sources and
// destinations uniform (like torch.randint in SPEC §9's PyG baseline).
struct RandomParams {
  int64_t num_vertices = 0;
  int64_t num_edges = 0;
  uint64_t seed = 1;
  VertexDataParams data;  // random features N(0,1) and uniform labels
};
Graph random_graph(const RandomParams& p);

// R-MAT with Graph500 defaults (a, b, c, d) = (0.57, 0.19, 0.19, 0.05);
// N = 2^scale.
struct RmatParams {
  int scale = 16;
  int64_t num_edges = 0;  // 0 = 16 * N (Graph500 edge factor)
  double a = 0.57, b = 0.19, c = 0.19, d = 0.05;
  uint64_t seed = 1;
  VertexDataParams data;
};
Graph rmat_graph(const RmatParams& p);

// Community graph: degree-corrected stochastic block model with power-law
// (skewed) expected degrees; labels = communities; features = class signal
// (a per-class mean vector scaled by `signal`) plus N(0, noise^2) noise.
struct CommunityParams {
  int64_t num_vertices = 10000;
  double avg_degree = 10.0;
  int32_t num_classes = 8;
  double homophily = 0.8;        // fraction of edge endpoints inside the community
  double degree_exponent = 2.5;  // power-law exponent of expected degrees
  int32_t feature_dim = 64;
  double signal = 1.0;           // length of each class's mean feature vector
  double noise = 1.0;
  double train_fraction = 0.1, val_fraction = 0.2;  // rest = test
  uint64_t seed = 1;
};
Graph community_graph(const CommunityParams& p);

}  // namespace ht::gen
