// Atomic file writes: content goes to a temporary file beside the target, then a rename, so a
// reader (or a resumed sweep) never sees a partial file.
#pragma once
#include <string>

namespace pathbench {

// Throws pathbench::Error naming the path when it cannot be written.
void write_file_atomically(const std::string& path, const std::string& content);
// Reads a whole file; throws pathbench::Error naming the path when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace pathbench
