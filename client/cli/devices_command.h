// `pricer devices`: the server's devices, their memory accounting and its
// queue, as a table or (--json) the ListDevices reply.
#pragma once

#include <string>

#include "client/cli/command.h"

namespace pricer {

class DevicesCommand final : public Command {
 public:
  explicit DevicesCommand(CLI::App& app);

  int Run(PricerClient& client) override;

 private:
  bool json_ = false;
};

}  // namespace pricer
