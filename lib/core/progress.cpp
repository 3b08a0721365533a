#include "core/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "core/log.hpp"

namespace ht {
namespace {
std::string human(double x) {
  if (x >= 1e9) return fmt::format("{:.2f}G", x / 1e9);
  if (x >= 1e6) return fmt::format("{:.2f}M", x / 1e6);
  if (x >= 1e3) return fmt::format("{:.1f}k", x / 1e3);
  return fmt::format("{:.0f}", x);
}
}  // namespace

Progress::Progress(std::string what, int64_t total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total), tty_(isatty(STDERR_FILENO)) {
  // First report after a short delay so quick loops stay silent.
  next_report_ = tty_ ? 0.5 : 5.0;
}

Progress::~Progress() {
  if (printed_ && !finished_) finish();
}

void Progress::add(int64_t n) {
  done_.fetch_add(n, std::memory_order_relaxed);
  if (timer_.seconds() < next_report_.load(std::memory_order_relaxed)) return;
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock() || timer_.seconds() < next_report_) return;
  report(false);
  next_report_ = timer_.seconds() + (tty_ ? 0.5 : 10.0);
}

void Progress::finish() {
  std::lock_guard lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (printed_) report(true);
}

void Progress::report(bool final) {
  if (!log::enabled(log::Level::info)) return;
  const double t = timer_.seconds();
  const double done = static_cast<double>(done_.load());
  const double rate = t > 0 ? done / t : 0;
  std::string line;
  if (total_ > 0) {
    const double pct = 100.0 * done / static_cast<double>(total_);
    const double eta = rate > 0 ? (static_cast<double>(total_) - done) / rate : 0;
    line = final ? fmt::format("{}: {}/{} {} in {:.1f} s ({} {}/s)", what_, human(done), human(total_),
                               unit_, t, human(rate), unit_)
                 : fmt::format("{}: {}/{} {} ({:.0f}%), {} {}/s, ETA {:.0f} s", what_, human(done),
                               human(total_), unit_, pct, human(rate), unit_, eta);
  } else {
    line = fmt::format("{}: {} {} in {:.1f} s ({} {}/s)", what_, human(done), unit_, t, human(rate), unit_);
  }
  if (tty_) {
    fmt::print(stderr, "\r\033[K{}{}", line, final ? "\n" : "");
  } else {
    fmt::print(stderr, "{}\n", line);
  }
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace ht
