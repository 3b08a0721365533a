#include "dist/launch.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"

namespace ht::dist {
namespace {

constexpr const char* kLaunchError = "launcher environment";

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < 0) return std::nullopt;
  return value;
}

// A variable's value as a count or index; nullopt when unset. Set but not a
// non-negative int is an error: a launcher that set it meant something.
std::optional<int> env_int(const char* name) {
  const char* text = std::getenv(name);
  if (!text) return std::nullopt;
  const auto v = parse_number<int>(text);
  HT_CHECK(v, "{}: {}='{}' is not a non-negative whole number", kLaunchError, name, text);
  return v;
}

int required_int(const char* name, const char* launcher) {
  const auto v = env_int(name);
  HT_CHECK(v, "{}: {} is not set, but other variables of {} are", kLaunchError, name, launcher);
  return *v;
}

// The variable names behind one LaunchInfo, for its checks' messages.
struct Names {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

void check(const LaunchInfo& l, const Names& n) {
  HT_CHECK(l.size >= 1, "{}: {}={} (a process count is at least 1)", kLaunchError, n.size, l.size);
  HT_CHECK(l.rank < l.size, "{}: {}={} is not below {}={}", kLaunchError, n.rank, l.rank, n.size, l.size);
  HT_CHECK(l.local_size >= 1 && l.local_size <= l.size, "{}: {}={} is not between 1 and {}={}", kLaunchError,
           n.local_size, l.local_size, n.size, l.size);
  HT_CHECK(l.local_rank < l.local_size, "{}: {}={} is not below {}={}", kLaunchError, n.local_rank, l.local_rank,
           n.local_size, l.local_size);
}

std::optional<LaunchInfo> open_mpi() {
  if (!std::getenv("OMPI_COMM_WORLD_RANK") && !std::getenv("OMPI_COMM_WORLD_SIZE")) return std::nullopt;
  const char* who = "Open MPI mpirun";
  LaunchInfo l;
  l.launcher = who;
  l.rank = required_int("OMPI_COMM_WORLD_RANK", who);
  l.size = required_int("OMPI_COMM_WORLD_SIZE", who);
  l.local_rank = required_int("OMPI_COMM_WORLD_LOCAL_RANK", who);
  l.local_size = required_int("OMPI_COMM_WORLD_LOCAL_SIZE", who);
  check(l, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"});
  return l;
}

// Hydra sets the local pair too; a PMI launcher that does not gets 0 of 1.
std::optional<LaunchInfo> pmi() {
  if (!std::getenv("PMI_RANK") && !std::getenv("PMI_SIZE")) return std::nullopt;
  const char* who = "MPICH Hydra";
  LaunchInfo l;
  l.launcher = who;
  l.rank = required_int("PMI_RANK", who);
  l.size = required_int("PMI_SIZE", who);
  const auto local_rank = env_int("MPI_LOCALRANKID"), local_size = env_int("MPI_LOCALNRANKS");
  if (local_rank && local_size) {
    l.local_rank = *local_rank;
    l.local_size = *local_size;
  }
  check(l, {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"});
  return l;
}

std::optional<LaunchInfo> slurm() {
  const char* step = std::getenv("SLURM_STEP_ID");
  if (!std::getenv("SLURM_PROCID") || !step) return std::nullopt;
  // Slurm's special steps are the top ids of uint32 (batch script, extern,
  // interactive, pending: 0xfffffffa..0xffffffff across versions): a batch
  // script or an salloc shell is one process, whatever SLURM_NTASKS says.
  const auto step_id = parse_number<int64_t>(step);
  HT_CHECK(step_id, "{}: SLURM_STEP_ID='{}' is not a non-negative whole number", kLaunchError, step);
  if (*step_id >= 0xfffffff0) return std::nullopt;

  const char* who = "Slurm srun";
  LaunchInfo l;
  l.launcher = who;
  l.rank = required_int("SLURM_PROCID", who);
  const char* size_var = std::getenv("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  l.size = required_int(size_var, who);
  l.local_rank = required_int("SLURM_LOCALID", who);
  const char* local_size_var = "SLURM_NTASKS_PER_NODE";
  const char* list_var = std::getenv("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  const auto node = env_int("SLURM_NODEID");
  if (const char* list = std::getenv(list_var); list && node) {
    l.local_size = slurm_tasks_on_node(list, *node, list_var);
    local_size_var = list_var;
  } else if (const auto per_node = env_int("SLURM_NTASKS_PER_NODE")) {
    l.local_size = *per_node;
  } else {
    // Unknown (srun always sets the list; another launcher may not): at least
    // this process's local rank plus one, so the local rank stays and still
    // picks this process's devices.
    l.local_size = l.local_rank + 1;
  }
  check(l, {"SLURM_PROCID", size_var, "SLURM_LOCALID", local_size_var});
  return l;
}

}  // namespace

int slurm_tasks_on_node(std::string_view list, int node, const char* variable) {
  const auto bad = [&]() {
    return Error(fmt::format("{}: {}='{}' is not a Slurm task count list (like 2(x3),1)", kLaunchError, variable,
                             list));
  };
  // The whole list is checked, also past the node asked for.
  int64_t nodes = 0;  // before the current item
  std::optional<int> found;
  std::string_view rest = list;
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    int64_t repeat = 1;
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {  // "N(xM)"
      if (item.size() < paren + 4 || item.substr(paren, 2) != "(x" || item.back() != ')') throw bad();
      const auto m = parse_number<int>(item.substr(paren + 2, item.size() - paren - 3));
      if (!m || *m < 1) throw bad();
      repeat = *m;
      item = item.substr(0, paren);
    }
    const auto tasks = parse_number<int>(item);
    if (!tasks) throw bad();
    if (!found && node < nodes + repeat) found = *tasks;
    nodes += repeat;
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  HT_CHECK(found, "{}: {}='{}' lists {} node(s), but SLURM_NODEID is {}", kLaunchError, variable, list, nodes, node);
  return *found;
}

LaunchInfo detect_launch() {
  if (auto l = open_mpi()) return *l;
  if (auto l = pmi()) return *l;
  if (auto l = slurm()) return *l;
  return {};
}

}  // namespace ht::dist
