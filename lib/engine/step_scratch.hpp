#pragma once
// Scratch arrays of the device-plan steps (device_plan.cpp, pull_lists.cpp),
// kept across the steps one team builds. Built fresh per step, a step's
// counters, offsets and lists were hundreds of MB of new pages each (page
// faults, the kernel's zeroing, THP compaction) and as many munmaps when
// freed (TLB shootdowns on every core, the address space's lock taken for
// writing while the vertex store faults in beside them): at friendster size
// the 32 steps' topology took 782 s summed, the process 1647 s of system time
// (bench/RESULTS.md, session 13; issue 33).
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/bulk_memory.hpp"
#include "core/scoped_override.hpp"

namespace ht {

// Test knobs of the steps' scratch (ScopedStepScratchTuning). The bytes of a
// plan never depend on them.
struct StepScratchTuning {
  bool fresh = false;   // a new workspace for every step (none reused)
  bool poison = false;  // scratch filled with 0xa5 bytes whenever it is taken
  bool reverse = false; // the steps taken last to first
};
inline StepScratchTuning& step_scratch_tuning() {
  static StepScratchTuning tuning;
  return tuning;
}
using ScopedStepScratchTuning = ScopedOverride<StepScratchTuning, step_scratch_tuning>;

// Storage for up to capacity() elements of trivial type T that the caller
// writes before it reads them: no value-initialization (a vector's resize
// zeroes its elements serially, 10^8 of them being a serial memset of
// hundreds of MB). Anonymous pages (huge where offered: HostBlock), faulted
// in by the calling thread's OpenMP team when large; grows only when asked
// for more than it holds, so a workspace reserved at the largest step's size
// maps nothing more.
template <typename T>
class ScratchArray {
 public:
  // At least n elements; their contents are unspecified (poisoned in tests).
  T* take(int64_t n) {
    T* p = take_raw(n);
    if (step_scratch_tuning().poison && n > 0) std::memset(static_cast<void*>(p), 0xa5, static_cast<size_t>(n) * sizeof(T));
    return p;
  }
  // The same, not poisoned: for holders that keep an invariant in the
  // contents themselves (grown() says the contents were lost).
  T* take_raw(int64_t n) {
    grown_ = false;
    if (n > capacity_) {
      block_.reset();
      const size_t bytes = static_cast<size_t>(n) * sizeof(T);
      block_.emplace(bytes);
      if (bytes >= bulk_tuning().huge_bytes) prefault_pages(block_->data(), bytes);
      capacity_ = n;
      grown_ = true;
    }
    return data();
  }
  T* data() const { return block_ ? reinterpret_cast<T*>(block_->data()) : nullptr; }
  int64_t capacity() const { return capacity_; }
  bool grown() const { return grown_; }

 private:
  std::optional<HostBlock> block_;
  int64_t capacity_ = 0;
  bool grown_ = false;
};

}  // namespace ht
