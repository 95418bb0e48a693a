// `pricer upload FILE`: stores an N x M scenario matrix on the server and
// prints its id, for `pricer price --scenario-set`.
#pragma once

#include <string>

#include "client/cli/command.h"

namespace pricer {

class UploadCommand final : public Command {
 public:
  explicit UploadCommand(CLI::App& app);

  int Run(PricerClient& client) override;

 private:
  std::string file_;
};

}  // namespace pricer
