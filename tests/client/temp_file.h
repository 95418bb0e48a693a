// A file the client tests write, in the temporary directory, removed at the
// end of the test.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

namespace pricer {

class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text)
      : path_((std::filesystem::temp_directory_path() / name).string()) {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace pricer
