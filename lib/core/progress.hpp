#pragma once
// Progress reporter for long loops: done/total, rate, ETA. Rate-limited; a
// single updating line on a terminal, plain lines (every few seconds) when
// stderr is not a terminal (logs of batch jobs). Thread-safe `add`.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/timer.hpp"

namespace ht {

class Progress {
 public:
  // `unit` names what is counted ("edges", "rows"); total 0 = unknown.
  Progress(std::string what, int64_t total, std::string unit = "items");
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void add(int64_t n);
  void finish();  // prints the final line (idempotent)

 private:
  void report(bool final);
  std::string what_, unit_;
  int64_t total_;
  std::atomic<int64_t> done_{0};
  std::atomic<double> next_report_{0};
  std::mutex mutex_;
  Timer timer_;
  bool tty_;
  bool finished_ = false;
  bool printed_ = false;
};

}  // namespace ht
