// The bytes of one fuzz input as a file, for the readers that take a path:
// one file per process under /dev/shm (memory, not disk), rewritten for
// every input and removed when the fuzzer exits.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pricer {

class FuzzInputFile {
 public:
  explicit FuzzInputFile(const std::string& name)
      : path_("/dev/shm/pricer-fuzz-" + name + "-" + std::to_string(getpid())) {}
  ~FuzzInputFile() { std::remove(path_.c_str()); }
  FuzzInputFile(const FuzzInputFile&) = delete;
  FuzzInputFile& operator=(const FuzzInputFile&) = delete;

  // Replaces the file's contents with `data`; returns its path.
  const std::string& Write(const uint8_t* data, size_t size) {
    std::FILE* file = std::fopen(path_.c_str(), "wb");
    if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
      std::perror(path_.c_str());
      std::abort();  // the harness, not the code under test, failed
    }
    return path_;
  }

 private:
  const std::string path_;
};

}  // namespace pricer
