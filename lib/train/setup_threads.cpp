#include "train/setup_threads.hpp"

#include <omp.h>

#include <algorithm>

#include "core/log.hpp"

namespace ht {

int setup_thread_count(int64_t edges, int available) {
  available = std::max(available, 1);
  const int64_t wanted = (std::max<int64_t>(edges, 0) + kEdgesPerSetupThread - 1) / kEdgesPerSetupThread;
  return static_cast<int>(std::clamp<int64_t>(wanted, std::min(available, kMinSetupThreads), available));
}

SetupThreads::SetupThreads(int64_t edges)
    : available_(omp_get_max_threads()), threads_(setup_thread_count(edges, available_)) {
  if (threads_ == available_) return;
  omp_set_num_threads(threads_);
  log::debug("setup on {} of {} threads ({} adjacency entries: one thread per {} M; with more a small graph's setup "
             "was slower)",
             threads_, available_, edges, kEdgesPerSetupThread >> 20);
}

void SetupThreads::restore() {
  if (restored_) return;
  restored_ = true;
  if (threads_ != available_) omp_set_num_threads(available_);
}

}  // namespace ht
