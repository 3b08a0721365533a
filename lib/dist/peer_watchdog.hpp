#pragma once
// A job's processes wait for each other in every collective call: a process
// that is stopped (SIGSTOP, a frozen node) or hung outside MPI leaves the
// others waiting forever, since MPI has no timeouts. The watchdog is a thread
// that notices a call lasting longer than the limit and says so through
// `on_timeout` (MpiTransport prints one line and ends its process, and the
// launcher then ends the job).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace ht::dist {

class PeerWatchdog {
 public:
  // `limit_s` <= 0: no thread, no limit. `on_timeout(op, waited_s)` runs on
  // the watchdog's thread, once per call that overruns.
  PeerWatchdog(double limit_s, std::function<void(const char* op, double waited_s)> on_timeout);
  ~PeerWatchdog();
  PeerWatchdog(const PeerWatchdog&) = delete;
  PeerWatchdog& operator=(const PeerWatchdog&) = delete;

  // One collective call, timed while the object lives (calls do not nest).
  class Call {
   public:
    Call(PeerWatchdog& w, const char* op);
    ~Call();
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    PeerWatchdog& w_;
  };

  double limit_seconds() const { return limit_s_; }

 private:
  void watch();

  double limit_s_;
  std::function<void(const char*, double)> on_timeout_;
  std::atomic<int64_t> since_ns_{0};  // steady clock at the call's start; 0: none
  std::atomic<const char*> op_{nullptr};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace ht::dist
