#pragma once
// NumPy .npz archives (np.savez / np.savez_compressed: a zip of .npy members,
// stored or deflated) read with libzip; each member becomes an NpyArray held
// in memory. Errors name the archive, or "archive.npz:member.npy" and the
// byte offset inside the member.
#include <string>
#include <vector>

#include "datasets/npy.hpp"

typedef struct zip zip_t;

namespace ht::data {

class NpzArchive {
 public:
  explicit NpzArchive(const std::string& path);
  ~NpzArchive();
  NpzArchive(const NpzArchive&) = delete;
  NpzArchive& operator=(const NpzArchive&) = delete;

  const std::string& path() const { return path_; }
  // Array names (member names without ".npy"), in archive order.
  const std::vector<std::string>& keys() const { return keys_; }
  bool has(const std::string& key) const;
  // Reads (and inflates) member key + ".npy"; its CRC is checked.
  NpyArray array(const std::string& key) const;
  // A string scalar (SciPy's save_npz stores its 'format' as a 0-d |S3
  // array; <U arrays too): its characters, trailing NULs dropped.
  std::string string_scalar(const std::string& key) const;

 private:
  // The member's bytes (inflated, CRC checked); `name` is set for messages.
  std::vector<std::byte> member_bytes(const std::string& key, std::string& name) const;

  std::string path_;
  zip_t* zip_ = nullptr;
  std::vector<std::string> keys_;
  std::vector<int64_t> index_;  // zip index of each key
};

}  // namespace ht::data
