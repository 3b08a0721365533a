#include "engine/device_uploads.hpp"

#include <omp.h>

#include <algorithm>
#include <future>

#include "core/error.hpp"

namespace ht {

void upload_on_devices(Executor& exec, std::span<const std::vector<ByteUpload>> per_device) {
  HT_CHECK(static_cast<int>(per_device.size()) <= exec.num_devices(), "uploads for {} devices, the executor has {}",
           per_device.size(), exec.num_devices());
  const auto busy = std::count_if(per_device.begin(), per_device.end(), [](const auto& u) { return !u.empty(); });
  if (busy == 0) return;
  exec.synchronize_all();
  auto run = [&exec, per_device](size_t i) {
    Device& d = exec.device(static_cast<int>(i));
    d.use(Queue::compute);
    for (const ByteUpload& u : per_device[i]) d.upload_bytes(u.src, u.dst);
  };
  if (busy == 1) {
    for (size_t i = 0; i < per_device.size(); ++i)
      if (!per_device[i].empty()) run(i);
  } else {
    const int cores = std::max(1, omp_get_max_threads() / static_cast<int>(busy));
    std::vector<std::future<void>> threads;
    for (size_t i = 0; i < per_device.size(); ++i) {
      if (per_device[i].empty()) continue;
      threads.push_back(std::async(std::launch::async, [&exec, run, cores, i] {
        exec.enter_thread();
        omp_set_num_threads(cores);  // (this thread's own setting)
        run(i);
      }));
    }
    for (auto& t : threads) t.wait();
    for (auto& t : threads) t.get();  // the first error, once every thread has ended
  }
  exec.synchronize_all();
}

}  // namespace ht
