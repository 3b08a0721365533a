// A job in which one process fails while the others wait for it, for
// tests/cli/dist_abort.sh: the whole job must end, non-zero, at once. Modes:
//   ok     every process meets the others at a barrier; exit 0
//   abort  process 1 prints an error and calls Transport::abort(3) (what a
//          failing ht-train process does); the others wait in the barrier
//   throw  process 1 throws with its transport in scope: the unwinding skips
//          MPI_Finalize (which would wait for the others), main prints the
//          error and returns 1, and the launcher ends the job
// Run under mpirun with 2 or more processes.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"
#include "dist/connect.hpp"
#include "dist/launch.hpp"

namespace {

int run(const std::string& mode) {
  HT_CHECK(mode == "ok" || mode == "abort" || mode == "throw", "mode '{}' is not ok, abort or throw", mode);
  const auto transport = ht::dist::connect_processes(ht::dist::detect_launch());
  HT_CHECK(transport, "run under mpirun with 2 or more processes");
  if (transport->rank() == 1 && mode == "abort") {
    fmt::print(stderr, "error: process 1 fails on purpose; aborting the job\n");
    std::fflush(stderr);
    transport->abort(3);
  }
  if (transport->rank() == 1 && mode == "throw") throw ht::Error("process 1 fails on purpose (throw)");
  transport->barrier();
  if (transport->rank() == 0) fmt::print("ok: {}\n", transport->describe());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : "ok");
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
