#include "client/cli/devices_command.h"

#include <google/protobuf/util/json_util.h>

#include <iostream>

#include "absl/strings/str_format.h"

namespace pricer {

DevicesCommand::DevicesCommand(CLI::App& app)
    : Command(app.add_subcommand("devices", "list the server's devices")) {
  verb_->add_flag("--json", json_, "print the ListDevices reply as JSON");
}

int DevicesCommand::Run(PricerClient& client) {
  v1::ListDevicesReply reply;
  if (grpc::Status status = client.ListDevices(&reply); !status.ok()) return Fail(status);
  if (json_) {
    std::string text;
    google::protobuf::util::JsonPrintOptions print;
    print.add_whitespace = true;
    print.always_print_primitive_fields = true;
    (void)google::protobuf::util::MessageToJsonString(reply, &text, print);
    std::cout << text;
    return 0;
  }
  std::cout << "server version: "
            << (reply.server_version().empty() ? "not reported" : reply.server_version()) << "\n";
  std::cout << absl::StrFormat("%-10s %-6s %16s %16s %16s %12s %10s\n", "device", "kind",
                               "budget bytes", "in use bytes", "peak bytes", "shards done",
                               "busy s");
  for (const v1::DeviceInfo& d : reply.devices()) {
    std::cout << absl::StrFormat("%-10s %-6s %16d %16d %16d %12d %10.2f\n", d.name(), d.kind(),
                                 d.memory_budget_bytes(), d.bytes_in_use(), d.peak_bytes(),
                                 d.shards_done(), d.busy_seconds());
    if (!d.kernels().empty()) std::cout << "  kernels: " << d.kernels() << "\n";
    if (d.headroom_bytes() > 0) {
      std::cout << absl::StrFormat("  headroom outside the budget (measured at start): %d bytes\n",
                                   d.headroom_bytes());
    }
    if (d.idle_block_bytes() > 0) {
      std::cout << absl::StrFormat("  kept idle for the next jobs (not in use): %d bytes\n",
                                   d.idle_block_bytes());
    }
    if (!d.lost().empty()) std::cout << "  lost: " << d.lost() << "\n";
  }
  std::cout << absl::StrFormat(
      "jobs queued or running: %d of %d; unsent chunk bytes: %d of %d; pinned host bytes: %d of "
      "%d (peak %d)\n",
      reply.queued_jobs(), reply.max_queued_jobs(), reply.pending_bytes(),
      reply.max_pending_bytes(), reply.pinned_bytes_in_use(), reply.pinned_memory_bytes(),
      reply.pinned_peak_bytes());
  return 0;
}

}  // namespace pricer
