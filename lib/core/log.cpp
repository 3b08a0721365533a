#include "core/log.hpp"

#include <atomic>
#include <mutex>

namespace ht::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::info)};
std::mutex g_mutex;
}  // namespace

void set_level(Level l) { g_level.store(static_cast<int>(l)); }
Level level() { return static_cast<Level>(g_level.load()); }

void write(Level l, std::string_view text) {
  static constexpr const char* kPrefix[] = {"error: ", "warning: ", "", "debug: "};
  std::lock_guard lock(g_mutex);
  fmt::print(stderr, "{}{}\n", kPrefix[static_cast<int>(l)], text);
  std::fflush(stderr);
}

}  // namespace ht::log
