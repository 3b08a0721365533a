#include "engine/device_uploads.hpp"

#include <omp.h>

#include <algorithm>
#include <future>

#include "core/error.hpp"

namespace ht {

void on_devices_at_once(Executor& exec, const std::vector<bool>& busy, const std::function<void(int)>& work) {
  const auto count = std::count(busy.begin(), busy.end(), true);
  if (count <= 1) {
    for (size_t i = 0; i < busy.size(); ++i)
      if (busy[i]) work(static_cast<int>(i));
    return;
  }
  const int cores = std::max(1, omp_get_max_threads() / static_cast<int>(count));
  std::vector<std::future<void>> threads;
  for (size_t i = 0; i < busy.size(); ++i) {
    if (!busy[i]) continue;
    threads.push_back(std::async(std::launch::async, [&exec, &work, cores, i] {
      exec.enter_thread();
      omp_set_num_threads(cores);  // (this thread's own setting)
      work(static_cast<int>(i));
    }));
  }
  for (auto& t : threads) t.wait();
  for (auto& t : threads) t.get();  // the first error, once every thread has ended
}

void upload_on_devices(Executor& exec, std::span<const std::vector<ByteUpload>> per_device) {
  HT_CHECK(static_cast<int>(per_device.size()) <= exec.num_devices(), "uploads for {} devices, the executor has {}",
           per_device.size(), exec.num_devices());
  std::vector<bool> busy;
  for (const auto& u : per_device) busy.push_back(!u.empty());
  if (std::find(busy.begin(), busy.end(), true) == busy.end()) return;
  exec.synchronize_all();
  on_devices_at_once(exec, busy, [&exec, per_device](int i) {
    Device& d = exec.device(i);
    d.use(Queue::compute);
    for (const ByteUpload& u : per_device[static_cast<size_t>(i)]) d.upload_bytes(u.src, u.dst);
  });
  exec.synchronize_all();
}

}  // namespace ht
