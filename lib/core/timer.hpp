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

// Records (phase name, seconds) in order; used for "per-phase timings". A
// phase may list parts (add_part: where its own seconds went, for the
// summary's detail); they are not phases of their own and not in total().
class PhaseTimes {
 public:
  using Parts = std::vector<std::pair<std::string, double>>;
  void add(std::string name, double seconds) { phases_.emplace_back(std::move(name), seconds); }
  void add_part(const std::string& phase, std::string name, double seconds) {
    for (auto& [p, parts] : parts_)
      if (p == phase) {
        parts.emplace_back(std::move(name), seconds);
        return;
      }
    parts_.push_back({phase, {{std::move(name), seconds}}});
  }
  // Another accumulator's phases and parts after these.
  void append(const PhaseTimes& o) {
    for (const auto& [name, seconds] : o.phases_) add(name, seconds);
    for (const auto& [phase, parts] : o.parts_)
      for (const auto& [name, seconds] : parts) add_part(phase, name, seconds);
  }
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  // The parts of `phase`, in the order added (empty when it has none).
  const Parts& parts(const std::string& phase) const {
    static const Parts none;
    for (const auto& [p, parts] : parts_)
      if (p == phase) return parts;
    return none;
  }
  double total() const {
    double t = 0;
    for (const auto& p : phases_) t += p.second;
    return t;
  }

 private:
  std::vector<std::pair<std::string, double>> phases_;
  std::vector<std::pair<std::string, Parts>> parts_;
};

}  // namespace ht
