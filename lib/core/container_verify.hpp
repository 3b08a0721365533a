#pragma once
// Checksums of some sections of a container file only: a reader that never
// reads a large section (ht-reorganize and a graph's features) opens the file
// unverified and verifies the sections it reads, instead of faulting the
// whole file into its RSS. (Apart from container.hpp so that this addition
// does not touch every file that includes it.)
#include <span>
#include <string>

#include "core/container.hpp"

namespace ht {

// Verifies the checksum of every section of `r` not named in `skip`, as
// ReadOptions::verify_checksums does for all (same error). The header
// checksum, verified when `r` was opened, still covers the skipped
// sections' recorded checksums, and so the file's identity.
void verify_section_checksums(const ContainerReader& r, std::span<const std::string> skip);

}  // namespace ht
