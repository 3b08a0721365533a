#pragma once
// Wall-clock timers and a named phase accumulator for per-phase timings.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace ht {

// Seconds on the steady clock since its epoch: a common origin for timelines
// taken by different devices and threads.
inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class Timer {
 public:
  Timer() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double millis() const { return seconds() * 1e3; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// Records (phase name, seconds) in order; used for "per-phase timings".
class PhaseTimes {
 public:
  void add(std::string name, double seconds) { phases_.emplace_back(std::move(name), seconds); }
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  double total() const {
    double t = 0;
    for (const auto& p : phases_) t += p.second;
    return t;
  }

 private:
  std::vector<std::pair<std::string, double>> phases_;
};

}  // namespace ht
