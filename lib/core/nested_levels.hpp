#pragma once
// Nested OpenMP parallelism for a scope: tasks fewer than threads (32 plan
// steps on 64 cores) run their inner loops on teams of the threads left
// over. The previous limit comes back at the end of the scope, also when it
// ends by an exception. Note: libgomp starts fresh threads for every nested
// region (its pool serves the outermost level only), so nested regions
// should be few and large.
#include <omp.h>

#include <algorithm>

namespace ht {

class ScopedNestedLevels {
 public:
  explicit ScopedNestedLevels(int levels = 2) : saved_(omp_get_max_active_levels()) {
    omp_set_max_active_levels(std::max(saved_, levels));
  }
  ~ScopedNestedLevels() { omp_set_max_active_levels(saved_); }
  ScopedNestedLevels(const ScopedNestedLevels&) = delete;
  ScopedNestedLevels& operator=(const ScopedNestedLevels&) = delete;

 private:
  int saved_;
};

}  // namespace ht
