#pragma once
// `ht-convert --generate random|rmat|community`: the synthetic generators of
// datasets/generators.hpp, then the same transformations and writer as a
// conversion. Unset options keep the generator's own defaults.
#include <cstdint>
#include <optional>
#include <string>

#include "core/names.hpp"
#include "datasets/convert.hpp"

namespace ht::data {

enum class GeneratorKind { random, rmat, community };
// "random", "rmat", "community": ht-convert --generate, and its errors.
const NameTable<GeneratorKind>& generator_names();

// Transformations default to none.
struct GenerateOptions : SharedConvertOptions {
  GeneratorKind kind = GeneratorKind::random;
  std::optional<int64_t> vertices, edges;
  std::optional<int> scale;
  std::optional<double> rmat_a, rmat_b, rmat_c, rmat_d;
  std::optional<int32_t> classes, feature_dim;
  std::optional<double> avg_degree, homophily, degree_exponent, signal, noise;
};

void run_generate(const GenerateOptions& opt);

}  // namespace ht::data
