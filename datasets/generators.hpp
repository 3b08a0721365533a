#pragma once
// Synthetic graph generators. Deterministic for a given seed, independent of
// the thread count (block-seeded counter-based RNG). Multithreaded (OpenMP).
#include <cstdint>

#include "graph/feature_rows.hpp"
#include "graph/graph.hpp"

namespace ht::gen {

// A generated graph with its features described row by row instead of held
// (graph/feature_rows.hpp): `write_graph_streamed(path, graph.view(), features)`
// writes it without the N x F matrix ever being in memory (ht-convert
// --generate). The *_graph functions below return the same graph with the
// features filled in (tests, small graphs).
struct GeneratedGraph {
  Graph graph;           // topology, labels, split; no features
  FeatureRows features;  // dim 0 = none
};

// graph with features = materialize_features(features).
Graph with_features(GeneratedGraph&& g);

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
GeneratedGraph generate(const RandomParams& p);
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
GeneratedGraph generate(const RmatParams& p);
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
GeneratedGraph generate(const CommunityParams& p);
Graph community_graph(const CommunityParams& p);

// Web-like directed graph (crawled web graphs such as it-2004): pages grouped
// into hosts of power-law sizes, a fraction `homophily` of each page's links
// inside its host, the rest to pages anywhere; power-law in-degrees (targets
// drawn by a Pareto weight, capped so that the largest expected in-degree is
// max_in_degree) and out-degrees (exactly num_edges links in all); no
// self-loops, no duplicate links. Labels = a class per host (uniform), so
// that most links join pages of one class; features as the community
// graph's. Ids are shuffled by a seeded bijection unless host_order: then
// each host is a contiguous id range, in host order. Design, parameters and
// realized statistics: bench/GENERATORS.md.
struct WebParams {
  int64_t num_vertices = 100000;
  int64_t num_edges = 0;                // links; 0 = 28 per vertex (it-2004's average)
  int32_t num_classes = 16;
  double homophily = 0.8;               // fraction of a page's links inside its host
  double degree_exponent = 2.1;         // power-law exponent of in-degrees
  double out_degree_exponent = 2.7;     // power-law exponent of out-degrees
  double host_size = 1000;              // mean pages per host (before the cap of N / 64)
  double host_size_exponent = 2.2;      // power-law exponent of host sizes
  int64_t max_in_degree = 0;            // 0 = min(10 sqrt(E), (N - 1) / 4)
  int64_t max_out_degree = 0;           // 0 = min(300 E / N, (N - 1) / 2)
  bool host_order = false;              // keep ids in host order (hosts contiguous)
  int32_t feature_dim = 64;
  double signal = 1.0;                  // length of each class's mean feature vector
  double noise = 1.0;
  double train_fraction = 0.25, val_fraction = 0.25;  // rest = test
  uint64_t seed = 1;
};
GeneratedGraph generate(const WebParams& p);
Graph web_graph(const WebParams& p);

}  // namespace ht::gen
