#include "core/signals.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace ht::signals {
namespace {

constexpr int kSlots = 64;
constexpr int kPathBytes = 1024;

// Slot states: 0 free, 1 being written, 2 registered.
struct Slot {
  std::atomic<int> state{0};
  char path[kPathBytes];
};

Slot g_slots[kSlots];
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_graceful = 0;
volatile sig_atomic_t g_committed = 0;  // an output is in place (note_output_committed)
char g_tool[64] = "hongtu";

void write_stderr(const char* s) {
  const ssize_t n = ::write(STDERR_FILENO, s, std::strlen(s));
  (void)n;
}

void remove_temp_files() {
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == 2) ::unlink(s.path);
}

// Only async-signal-safe calls: unlink, write, _exit.
void handler(int sig) {
  if (g_graceful && g_stop == 0) {
    g_stop = sig;
    return;
  }
  // A scheduler may send SIGTERM to the job's shell (which forwards it) and
  // to every process: repeated SIGTERMs are one request. A second SIGINT
  // (an impatient Ctrl-C) stops at once.
  if (g_graceful && sig == SIGTERM) return;
  remove_temp_files();
  write_stderr(g_tool);
  write_stderr(sig == SIGINT ? ": interrupted by SIGINT" : ": interrupted by SIGTERM");
  write_stderr(g_graceful    ? " again; stopped at once, nothing more written\n"
               : g_committed ? "; the outputs finished before it are complete, nothing else written\n"
                             : "; no output written\n");
  ::_exit(128 + sig);
}

}  // namespace

void install(const std::string& tool, bool graceful) {
  std::strncpy(g_tool, tool.c_str(), sizeof(g_tool) - 1);
  g_graceful = graceful ? 1 : 0;
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int stop_signal() { return g_stop; }

void clear_stop_signal() { g_stop = 0; }

int register_temp_file(const std::string& path) {
  if (path.size() + 1 > static_cast<size_t>(kPathBytes)) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void note_output_committed() { g_committed = 1; }

void unregister_temp_file(int handle) {
  if (handle >= 0 && handle < kSlots) g_slots[handle].state.store(0, std::memory_order_release);
}

const char* signal_name(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

}  // namespace ht::signals
