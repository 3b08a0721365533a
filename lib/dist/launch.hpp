#pragma once
// Which process of a multi-process job this one is, from the launcher's
// environment alone (no MPI call: a job of one process must not start MPI).
// Launchers, first match wins:
//   Open MPI's mpirun  OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE
//   MPICH/Hydra (PMI)  PMI_RANK / PMI_SIZE, MPI_LOCALRANKID / MPI_LOCALNRANKS when set
//   Slurm's srun       SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
//                      SLURM_LOCALID, the node's count from SLURM_STEP_TASKS_PER_NODE
//                      (else SLURM_TASKS_PER_NODE) at SLURM_NODEID, else
//                      SLURM_NTASKS_PER_NODE, else SLURM_LOCALID + 1
// mpirun and Hydra come before Slurm: inside an allocation they start their
// daemons with srun, so their processes inherit a daemon's SLURM_PROCID.
// Slurm counts only inside a step started by srun (SLURM_PROCID and a real
// SLURM_STEP_ID): a batch script sees SLURM_NTASKS of the whole allocation
// but is one process.
#include <string>
#include <string_view>

namespace ht::dist {

struct LaunchInfo {
  int rank = 0, size = 1;              // this process among the job's
  int local_rank = 0, local_size = 1;  // ... among those on this node
  std::string launcher;                // "Open MPI mpirun", "MPICH Hydra", "Slurm srun"; empty: none
};

// From the environment. Throws ht::Error naming the variable when one is not
// a number, a rank is not below its count, or a launcher's variable is missing.
LaunchInfo detect_launch();

// One Slurm task-count list ("2(x3),1": 2 tasks on each of 3 nodes, then 1)
// at node `node`; throws naming `variable` when the text is not such a list
// or has no node `node`.
int slurm_tasks_on_node(std::string_view list, int node, const char* variable);

}  // namespace ht::dist
