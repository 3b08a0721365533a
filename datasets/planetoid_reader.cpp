#include "datasets/planetoid_reader.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "datasets/python_tools.hpp"
#include "datasets/script_outputs.hpp"

namespace ht::data {
namespace {

// The <name> of the only ind.<name>.graph file in `dir`.
std::string detect_name(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string f = entry.path().filename().string();
    if (f.rfind("ind.", 0) == 0 && f.size() > 10 && f.substr(f.size() - 6) == ".graph")
      names.push_back(f.substr(4, f.size() - 10));
  }
  if (ec) throw file_error(dir, fmt::format("cannot list the directory: {}", ec.message()));
  if (names.size() != 1)
    throw file_error(dir, fmt::format("found {} ind.<name>.graph files; pass --name (cora, citeseer, pubmed)",
                                      names.size()));
  return names[0];
}

}  // namespace

RawGraph read_planetoid(const std::string& dir, std::string name) {
  if (!std::filesystem::is_directory(dir))
    throw file_error(dir, "not a directory (--format planetoid expects the folder with the ind.<name>.* files)");
  if (name.empty()) name = detect_name(dir);
  ScratchDir out;
  run_python_script(helper_script("planetoid_to_npy.py"), {"--input", dir, "--name", name, "--output", out.path()}, dir);
  RawGraph g = read_script_outputs(out.path());
  log::info("{}: planetoid '{}': N = {}, {} adjacency entries, F = {}, {} classes", dir, name, g.num_vertices,
            g.edges.size(), g.data.feature_dim, g.data.num_classes);
  return g;
}

}  // namespace ht::data
