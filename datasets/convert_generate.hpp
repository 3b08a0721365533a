#pragma once
// `ht-convert --generate random|rmat|community|web`: the synthetic generators
// of datasets/generators.hpp, then the same transformations and writer as a
// conversion; the features are made while the file is written (never the
// whole matrix in memory). Unset options keep the generator's own defaults.
#include <cstdint>
#include <optional>
#include <string>

#include "core/names.hpp"
#include "datasets/convert.hpp"

namespace ht::data {

enum class GeneratorKind { random, rmat, community, web };
// "random", "rmat", "community", "web": ht-convert --generate, and its errors.
const NameTable<GeneratorKind>& generator_names();

// Transformations default to none.
struct GenerateOptions : SharedConvertOptions {
  GeneratorKind kind = GeneratorKind::random;
  std::optional<int64_t> vertices, edges;
  std::optional<int> scale;
  std::optional<double> rmat_a, rmat_b, rmat_c, rmat_d;
  std::optional<int32_t> classes, feature_dim;
  std::optional<double> avg_degree, homophily, degree_exponent, signal, noise;
  std::optional<double> host_size;  // web
  bool host_order = false;          // web
};

void run_generate(const GenerateOptions& opt);

}  // namespace ht::data
