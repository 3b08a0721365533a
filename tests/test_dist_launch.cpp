// Which process this is, from the launcher's environment (lib/dist/launch.*),
// and what one process or a build without MPI makes of it (connect.*).
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "dist/connect.hpp"
#include "dist/launch.hpp"

namespace ht::dist {
namespace {

// Every variable detect_launch reads: cleared for each test (the test may
// itself run under mpirun or srun) and put back after it.
const char* const kVars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "SLURM_PROCID", "SLURM_STEP_ID", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID",
    "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE"};

class DistLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_[v] = old;
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [k, v] : saved_) setenv(k.c_str(), v.c_str(), 1);
  }
  static void set(std::map<std::string, std::string> vars) {
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }
  // The message of the error detect_launch throws ("" when it throws none).
  static std::string error() {
    try {
      detect_launch();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::map<std::string, std::string> saved_;
};

void expect_launch(const LaunchInfo& l, int rank, int size, int local_rank, int local_size, const std::string& who) {
  EXPECT_EQ(l.rank, rank);
  EXPECT_EQ(l.size, size);
  EXPECT_EQ(l.local_rank, local_rank);
  EXPECT_EQ(l.local_size, local_size);
  EXPECT_EQ(l.launcher, who);
}

TEST_F(DistLaunch, NoLauncherIsOneProcess) { expect_launch(detect_launch(), 0, 1, 0, 1, ""); }

TEST_F(DistLaunch, OpenMpi) {
  set({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  expect_launch(detect_launch(), 3, 4, 1, 2, "Open MPI mpirun");
}

TEST_F(DistLaunch, OpenMpiBadValuesNameTheVariable) {
  set({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  EXPECT_EQ(error(), "");
  for (const char* bad : {"x", "", "-1", "1x", " 1", "99999999999"}) {
    set({{"OMPI_COMM_WORLD_RANK", bad}});
    const std::string e = error();
    EXPECT_NE(e.find("OMPI_COMM_WORLD_RANK='"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("not a non-negative whole number"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  set({{"OMPI_COMM_WORLD_RANK", "2"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_RANK=2 is not below OMPI_COMM_WORLD_SIZE=2"), std::string::npos) << error();
  set({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_SIZE=0"), std::string::npos) << error();
  set({{"OMPI_COMM_WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2"),
            std::string::npos)
      << error();
  set({{"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "3"}});
  EXPECT_NE(error().find("OMPI_COMM_WORLD_LOCAL_SIZE=3 is not between 1 and OMPI_COMM_WORLD_SIZE=2"),
            std::string::npos)
      << error();
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_NE(error().find("OMPI_COMM_WORLD_LOCAL_SIZE is not set"), std::string::npos) << error();
}

TEST_F(DistLaunch, Pmi) {
  set({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}});
  expect_launch(detect_launch(), 2, 3, 0, 1, "MPICH Hydra");
  set({{"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  expect_launch(detect_launch(), 2, 3, 1, 2, "MPICH Hydra");
  set({{"PMI_RANK", "3"}});
  EXPECT_NE(error().find("PMI_RANK=3 is not below PMI_SIZE=3"), std::string::npos) << error();
  unsetenv("PMI_SIZE");
  EXPECT_NE(error().find("PMI_SIZE is not set"), std::string::npos) << error();
}

TEST_F(DistLaunch, Srun) {
  // A step of 4 tasks, 2 per node, in an allocation of 8: this is task 3,
  // the second on node 1.
  set({{"SLURM_PROCID", "3"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "8"},
       {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
       {"SLURM_TASKS_PER_NODE", "4(x2)"}});
  expect_launch(detect_launch(), 3, 4, 1, 2, "Slurm srun");
  // Older or other srun: the job's variables.
  unsetenv("SLURM_STEP_NUM_TASKS");
  unsetenv("SLURM_STEP_TASKS_PER_NODE");
  expect_launch(detect_launch(), 3, 8, 1, 4, "Slurm srun");
  unsetenv("SLURM_TASKS_PER_NODE");
  set({{"SLURM_NTASKS_PER_NODE", "3"}});
  expect_launch(detect_launch(), 3, 8, 1, 3, "Slurm srun");
  unsetenv("SLURM_NTASKS_PER_NODE");
  expect_launch(detect_launch(), 3, 8, 1, 2, "Slurm srun");  // unknown: the local rank + 1
}

TEST_F(DistLaunch, SrunBadValuesNameTheVariable) {
  set({{"SLURM_PROCID", "4"}, {"SLURM_STEP_ID", "2"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", "0"}});
  EXPECT_NE(error().find("SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4"), std::string::npos) << error();
  set({{"SLURM_PROCID", "1"}, {"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2"}});
  EXPECT_NE(error().find("SLURM_STEP_TASKS_PER_NODE='2(x2' is not a Slurm task count list"), std::string::npos)
      << error();
  set({{"SLURM_STEP_TASKS_PER_NODE", "1,3"}, {"SLURM_LOCALID", "1"}});
  EXPECT_NE(error().find("SLURM_LOCALID=1 is not below SLURM_STEP_TASKS_PER_NODE=1"), std::string::npos) << error();
  set({{"SLURM_STEP_ID", "zero"}});
  EXPECT_NE(error().find("SLURM_STEP_ID='zero'"), std::string::npos) << error();
}

TEST_F(DistLaunch, SlurmBatchScriptIsOneProcess) {
  // sbatch: the allocation's task count, but no step started by srun.
  set({{"SLURM_NTASKS", "4"}, {"SLURM_TASKS_PER_NODE", "2(x2)"}, {"SLURM_NODEID", "0"}});
  expect_launch(detect_launch(), 0, 1, 0, 1, "");
  set({{"SLURM_PROCID", "0"}});
  expect_launch(detect_launch(), 0, 1, 0, 1, "");
  // Slurm's special steps (batch script 0xfffffffb, extern, interactive).
  for (const char* special : {"4294967291", "4294967292", "4294967290", "4294967294"}) {
    set({{"SLURM_STEP_ID", special}});
    expect_launch(detect_launch(), 0, 1, 0, 1, "");
  }
}

TEST_F(DistLaunch, MpiLaunchersComeBeforeSlurm) {
  // mpirun inside an allocation starts its daemons with srun: the processes
  // inherit a daemon's Slurm task variables.
  set({{"SLURM_PROCID", "0"}, {"SLURM_STEP_ID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}});
  set({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}});
  expect_launch(detect_launch(), 5, 8, 1, 4, "Open MPI mpirun");
  for (const char* v : kVars)
    if (std::string(v).starts_with("OMPI")) unsetenv(v);
  set({{"PMI_RANK", "1"}, {"PMI_SIZE", "4"}});
  expect_launch(detect_launch(), 1, 4, 0, 1, "MPICH Hydra");
}

TEST(DistSlurmTaskList, CountsPerNode) {
  EXPECT_EQ(slurm_tasks_on_node("4", 0, "V"), 4);
  for (int node = 0; node < 3; ++node) EXPECT_EQ(slurm_tasks_on_node("2(x3),1", node, "V"), 2);
  EXPECT_EQ(slurm_tasks_on_node("2(x3),1", 3, "V"), 1);
  EXPECT_EQ(slurm_tasks_on_node("1,2(x2),3", 2, "V"), 2);
  EXPECT_EQ(slurm_tasks_on_node("1,2(x2),3", 3, "V"), 3);
  try {
    slurm_tasks_on_node("2(x3),1", 4, "V");
    ADD_FAILURE() << "node 4 of 4";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("V='2(x3),1' lists 4 node(s), but SLURM_NODEID is 4"), std::string::npos)
        << e.what();
  }
  for (const char* bad : {"", "a", ",", "2,", "2(x0)", "2(3)", "2(x3", "2(x3)1", "(x2)", "2(x)", "-1", "2(x3),,1"}) {
    EXPECT_THROW(slurm_tasks_on_node(bad, 0, "V"), Error) << bad;
  }
}

TEST(DistConnect, OneProcessHasNoTransport) {
  // Never starts MPI, whatever the build.
  EXPECT_EQ(connect_processes(LaunchInfo{}), nullptr);
}

TEST(DistConnect, SeveralProcessesWithoutMpiFail) {
  if (built_with_mpi()) GTEST_SKIP() << "this build has MPI (test_dist_mpi covers the MPI transport)";
  LaunchInfo l;
  l.rank = 1;
  l.size = 4;
  l.launcher = "Open MPI mpirun";
  try {
    connect_processes(l);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "this ht-train was built without MPI, but Open MPI mpirun started 4 processes (this is process 1): "
                 "rebuild with libopenmpi-dev installed (`make deps`), or run one process");
  }
}

}  // namespace
}  // namespace ht::dist
