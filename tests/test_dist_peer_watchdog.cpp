// The watchdog of a job's collective calls (dist/peer_watchdog.hpp): a call
// longer than the limit is reported once, with its name; shorter calls, and
// time outside calls, are not; no limit means no thread and no report.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "dist/peer_watchdog.hpp"

namespace ht::dist {
namespace {

using namespace std::chrono_literals;

struct Reports {
  std::mutex mutex;
  int count = 0;
  std::string op;
  double waited = 0;
  auto callback() {
    return [this](const char* o, double w) {
      std::lock_guard lock(mutex);
      ++count;
      op = o;
      waited = w;
    };
  }
};

TEST(PeerWatchdog, ReportsACallLongerThanTheLimitOnce) {
  Reports r;
  {
    PeerWatchdog w(0.1, r.callback());
    const PeerWatchdog::Call call(w, "an allgather");
    std::this_thread::sleep_for(600ms);
  }
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.op, "an allgather");
  EXPECT_GE(r.waited, 0.1);
}

TEST(PeerWatchdog, ShortCallsAndIdleTimeAreNotReported) {
  Reports r;
  {
    PeerWatchdog w(1.0, r.callback());  // (margins for a loaded CI machine)
    for (int k = 0; k < 5; ++k) {
      const PeerWatchdog::Call call(w, "a barrier");
      std::this_thread::sleep_for(10ms);
    }
    std::this_thread::sleep_for(1500ms);  // between calls: not waiting for anyone
  }
  EXPECT_EQ(r.count, 0);
}

TEST(PeerWatchdog, NoLimitNoReport) {
  Reports r;
  {
    PeerWatchdog w(0, r.callback());
    const PeerWatchdog::Call call(w, "a message exchange");
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(r.count, 0);
}

}  // namespace
}  // namespace ht::dist
