#include "datasets/npz_reader.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/file_io.hpp"
#include "core/log.hpp"
#include "datasets/python_tools.hpp"
#include "datasets/script_outputs.hpp"

namespace ht::data {

bool npz_is_directed(const std::string& path) {
  return std::filesystem::path(path).stem().string().find("directed") != std::string::npos;
}

RawGraph read_npz(const std::string& path, int split_index) {
  if (!file_exists(path)) throw file_error(path, "file not found");
  if (split_index < 0) throw option_error("--split-index", "must be >= 0");
  ScratchDir out;
  run_python_script(helper_script("npz_to_npy.py"),
                    {"--input", path, "--split-index", std::to_string(split_index), "--output", out.path()}, path);
  RawGraph g = read_script_outputs(out.path());
  log::info("{}: N = {}, {} edge rows, F = {}, {} classes", path, g.num_vertices, g.edges.size(), g.data.feature_dim,
            g.data.num_classes);
  return g;
}

}  // namespace ht::data
