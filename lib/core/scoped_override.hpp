#pragma once
// A process-wide setting replaced for a scope and restored after it: the test
// knobs of the parallel paths (BulkTuning, StepScratchTuning), which tests
// shrink so that tiny inputs take the paths large ones take.
#include <utility>

namespace ht {

// `Global` returns the setting's one instance.
template <typename T, T& (*Global)()>
class ScopedOverride {
 public:
  explicit ScopedOverride(T value) : saved_(Global()) { Global() = std::move(value); }
  ~ScopedOverride() { Global() = saved_; }
  ScopedOverride(const ScopedOverride&) = delete;
  ScopedOverride& operator=(const ScopedOverride&) = delete;

 private:
  T saved_;
};

}  // namespace ht
