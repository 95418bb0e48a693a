// `pricer price`: sends one pricing request, writes its results as they
// arrive (.npy, CSV) and prints a summary; --split spreads it over servers,
// --resume continues an interrupted run.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "client/cli/command.h"
#include "client/lib/price_results.h"
#include "client/lib/request_options.h"

namespace pricer {

class PriceCommand final : public Command {
 public:
  explicit PriceCommand(CLI::App& app);

  int Run(PricerClient& client) override;

 private:
  // --timeout's value, and --shared-memory only with --full-out.
  absl::Status CheckClientFlags() const;

  PriceOptions options_;
  ResultFiles files_;
  std::string stats_list_;                   // --stats
  std::optional<std::string> error_target_;  // --error-target
  std::string contributions_list_;           // --contributions
  std::string contributions_prefix_;         // --contributions-out
  std::string sensitivities_list_;           // --sensitivities
  int split_ = 1;
  bool resume_ = false;
  std::optional<double> timeout_;  // --timeout, seconds
  bool json_ = false;
  // --shared-memory: SC through a ring of SharedRingLayout.client_slots slots.
  bool shared_memory_ = false;
};

}  // namespace pricer
