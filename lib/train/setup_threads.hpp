#pragma once
// The OpenMP threads of ht-train's setup, by the graph's size. A small graph
// on many cores set up slower with every core than with a few: on 64 cores
// (4 x H200) a 122 M-edge graph's in-memory setup took 2.5-2.7 s with 64
// threads, 1.1-1.3 s with 32 and 0.76-0.81 s with 16 (issue 33, session 17:
// short parallel regions whose idle threads spin, beside the CUDA driver's
// and the devices' threads). Large graphs keep every core. The results never
// depend on the thread count (the builders' tests run at several).
#include <cstdint>

namespace ht {

// One thread per kEdgesPerSetupThread adjacency entries, at least
// min(available, kMinSetupThreads), at most `available`.
inline constexpr int64_t kEdgesPerSetupThread = int64_t{8} << 20;
inline constexpr int kMinSetupThreads = 4;
int setup_thread_count(int64_t edges, int available);

// Caps this thread's OpenMP threads (and so those of the threads it starts
// with its own count: run_in_teams, the device uploads) for setup; restore()
// or the destructor gives the count back for the epochs.
class SetupThreads {
 public:
  explicit SetupThreads(int64_t edges);
  ~SetupThreads() { restore(); }
  SetupThreads(const SetupThreads&) = delete;
  SetupThreads& operator=(const SetupThreads&) = delete;
  void restore();
  int threads() const { return threads_; }

 private:
  int available_ = 1, threads_ = 1;
  bool restored_ = false;
};

}  // namespace ht
