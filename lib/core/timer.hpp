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
// A phase may have run beside another (set_beside: in a thread of its own,
// its seconds its own wall time); it is not in total() either. A phase may
// also carry the process's system CPU seconds over its wall time (set_system:
// every thread's, so a phase that ran beside it counts in it too).
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
  void set_beside(std::string phase, std::string other) { beside_.emplace_back(std::move(phase), std::move(other)); }
  void set_system(std::string phase, double seconds) { system_.emplace_back(std::move(phase), seconds); }
  // Another accumulator's phases, parts and overlaps after these.
  void append(const PhaseTimes& o) {
    for (const auto& [name, seconds] : o.phases_) add(name, seconds);
    for (const auto& [phase, parts] : o.parts_)
      for (const auto& [name, seconds] : parts) add_part(phase, name, seconds);
    for (const auto& [phase, other] : o.beside_) set_beside(phase, other);
    for (const auto& [phase, seconds] : o.system_) set_system(phase, seconds);
  }
  const std::vector<std::pair<std::string, double>>& phases() const { return phases_; }
  // The parts of `phase`, in the order added (empty when it has none).
  const Parts& parts(const std::string& phase) const {
    static const Parts none;
    for (const auto& [p, parts] : parts_)
      if (p == phase) return parts;
    return none;
  }
  // The phase `phase` ran beside ("" when it ran alone).
  const std::string& beside(const std::string& phase) const {
    static const std::string alone;
    for (const auto& [p, other] : beside_)
      if (p == phase) return other;
    return alone;
  }
  // The system CPU seconds of `phase`; -1 when not measured.
  double system(const std::string& phase) const {
    for (const auto& [p, seconds] : system_)
      if (p == phase) return seconds;
    return -1;
  }
  double total() const {
    double t = 0;
    for (const auto& p : phases_)
      if (beside(p.first).empty()) t += p.second;
    return t;
  }

 private:
  std::vector<std::pair<std::string, double>> phases_;
  std::vector<std::pair<std::string, Parts>> parts_;
  std::vector<std::pair<std::string, std::string>> beside_;  // (phase, the phase it ran beside)
  std::vector<std::pair<std::string, double>> system_;       // (phase, system CPU seconds)
};

}  // namespace ht
