#include "dist/peer_watchdog.hpp"

#include <algorithm>

namespace ht::dist {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PeerWatchdog::PeerWatchdog(double limit_s, std::function<void(const char*, double)> on_timeout)
    : limit_s_(limit_s), on_timeout_(std::move(on_timeout)) {
  if (limit_s_ > 0) thread_ = std::thread([this] { watch(); });
}

PeerWatchdog::~PeerWatchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

PeerWatchdog::Call::Call(PeerWatchdog& w, const char* op) : w_(w) {
  w_.op_.store(op, std::memory_order_relaxed);
  w_.since_ns_.store(now_ns(), std::memory_order_release);
}

PeerWatchdog::Call::~Call() { w_.since_ns_.store(0, std::memory_order_release); }

// Looks a few times per limit (at least once a second); a call that overran
// is reported once.
void PeerWatchdog::watch() {
  const auto step = std::chrono::duration<double>(std::clamp(limit_s_ / 4, 0.01, 1.0));
  int64_t reported = 0;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, step, [this] { return stop_; })) {
    const int64_t since = since_ns_.load(std::memory_order_acquire);
    if (since == 0 || since == reported) continue;
    const double waited = static_cast<double>(now_ns() - since) * 1e-9;
    if (waited < limit_s_) continue;
    reported = since;
    on_timeout_(op_.load(std::memory_order_relaxed), waited);
  }
}

}  // namespace ht::dist
