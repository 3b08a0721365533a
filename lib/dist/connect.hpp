#pragma once
// The job's processes, connected: what ht-train calls first. One process
// (no launcher, or a launcher that started one) gets no transport and never
// starts MPI, in a build with MPI too: it runs exactly as a job of one
// process always has.
#include <memory>

#include "dist/launch.hpp"
#include "engine/transport.hpp"

namespace ht::dist {

// Whether this build has the MPI transport (HT_HAVE_MPI).
bool built_with_mpi();

// nullptr when launch.size == 1. Otherwise an MpiTransport whose rank and
// size MPI confirms to be the launcher's; throws ht::Error when they differ,
// or when this build has no MPI.
// `peer_timeout_s` > 0: a process that waits for the others longer than that
// in one call ends itself with one line (MpiTransport), and so the job.
std::unique_ptr<Transport> connect_processes(const LaunchInfo& launch, double peer_timeout_s = 0);

}  // namespace ht::dist
