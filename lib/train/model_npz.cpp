#include "train/model_npz.hpp"

#include <array>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/npy_header.hpp"
#include "core/error.hpp"
#include "core/json.hpp"

namespace ht {
namespace {

constexpr std::array<uint32_t, 256> crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t n = 0; n < 256; ++n) {
    uint32_t c = n;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[n] = c;
  }
  return t;
}

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff);
  s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xffff);
  put16(s, v >> 16);
}

// A zip archive of stored (uncompressed) members, as np.savez writes:
// a local header and the bytes per member, then the central directory.
class StoredZip {
 public:
  explicit StoredZip(const std::string& path) : file_(std::make_unique<AtomicFile>(path)) {}

  void add(const std::string& name, const std::string& head, std::span<const std::byte> body) {
    const uint64_t size = head.size() + body.size();
    if (size > std::numeric_limits<uint32_t>::max() || file_->position() > std::numeric_limits<uint32_t>::max())
      throw file_error(file_->path(), fmt::format("member {} would pass 4 GiB (no zip64 here)", name));
    const uint32_t crc = crc32_ieee(body, crc32_ieee(std::as_bytes(std::span(head.data(), head.size()))));
    Member m{name, crc, static_cast<uint32_t>(size), static_cast<uint32_t>(file_->position())};
    std::string local;
    put32(local, 0x04034b50);
    fields(local, m);
    put16(local, 0);  // extra field length
    local += name;
    file_->write(local.data(), local.size());
    file_->write(head.data(), head.size());
    file_->write(body.data(), body.size());
    members_.push_back(std::move(m));
  }

  std::unique_ptr<AtomicFile> finish() {
    std::string dir;
    for (const Member& m : members_) {
      put32(dir, 0x02014b50);
      put16(dir, 20);  // made by: version 2.0
      fields(dir, m);
      put16(dir, 0);   // extra
      put16(dir, 0);   // comment
      put16(dir, 0);   // disk
      put16(dir, 0);   // internal attributes
      put32(dir, 0);   // external attributes
      put32(dir, m.offset);
      dir += m.name;
    }
    const auto at = static_cast<uint32_t>(file_->position());
    std::string end;
    put32(end, 0x06054b50);
    put16(end, 0);
    put16(end, 0);
    put16(end, static_cast<uint32_t>(members_.size()));
    put16(end, static_cast<uint32_t>(members_.size()));
    put32(end, static_cast<uint32_t>(dir.size()));
    put32(end, at);
    put16(end, 0);
    file_->write(dir.data(), dir.size());
    file_->write(end.data(), end.size());
    return std::move(file_);
  }

 private:
  struct Member {
    std::string name;
    uint32_t crc, size, offset;
  };
  // The fields local and central headers share, from "version needed" to the name's length.
  static void fields(std::string& s, const Member& m) {
    put16(s, 20);      // version needed: 2.0
    put16(s, 0);       // flags
    put16(s, 0);       // method: stored
    put16(s, 0);       // time 00:00:00
    put16(s, 0x21);    // date 1980-01-01: a fixed stamp, so that equal models are equal files
    put32(s, m.crc);
    put32(s, m.size);  // compressed
    put32(s, m.size);  // uncompressed
    put16(s, static_cast<uint32_t>(m.name.size()));
  }

  std::unique_ptr<AtomicFile> file_;
  std::vector<Member> members_;
};

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::relu: return "relu";
    case Activation::elu: return "elu";
    case Activation::none: return "none";
  }
  return "none";
}

}  // namespace

uint32_t crc32_ieee(std::span<const std::byte> data, uint32_t crc) {
  static constexpr std::array<uint32_t, 256> table = crc_table();
  uint32_t c = ~crc;
  for (std::byte b : data) c = table[(c ^ static_cast<uint32_t>(b)) & 0xff] ^ (c >> 8);
  return ~c;
}

bool is_npz_path(const std::string& path) {
  return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npz") == 0;
}

std::string model_config_json(const ModelConfig& cfg, const ModelParams& params) {
  JsonWriter w;
  w.begin_object().field("format", "hongtu-model").field("version", kModelNpzVersion);
  w.field("model", name_of(cfg.kind));
  w.key("dims").begin_array();
  for (int d : cfg.dims) w.value(d);
  w.end_array();
  w.field("heads", cfg.hidden_heads()).field("out_heads", cfg.output_heads());
  // The float as it prints (0.2, not 0.20000000298...).
  w.field("bias", cfg.bias).field("leaky_slope", std::stod(fmt::format("{}", cfg.leaky_slope)));
  w.key("activations").begin_array();
  for (int l = 0; l < cfg.num_layers(); ++l) w.value(activation_name(cfg.activation(l)));
  w.end_array();
  w.key("tensors").begin_array();
  for (const ParamTensor& t : params.tensors) w.value(t.name);
  w.end_array().end_object();
  return w.str();
}

std::unique_ptr<AtomicFile> write_model_npz(const std::string& path, const ModelConfig& cfg, const ModelParams& params) {
  StoredZip zip(path);
  for (const ParamTensor& t : params.tensors) {
    HT_CHECK(t.name != "config", "a parameter named 'config' would hide the model's description");
    const std::string head = npy_header("<f4", fmt::format("({}, {})", t.rows, t.cols));
    zip.add(t.name + ".npy", head, std::as_bytes(std::span(t.value.data(), t.value.size())));
  }
  // A 0-d byte string: np.load(...)["config"].item() is the JSON, no pickle needed.
  const std::string config = model_config_json(cfg, params);
  const std::string head = npy_header(fmt::format("|S{}", config.size()), "()");
  zip.add("config.npy", head, std::as_bytes(std::span(config.data(), config.size())));
  return zip.finish();
}

}  // namespace ht
