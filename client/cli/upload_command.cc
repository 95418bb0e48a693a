#include "client/cli/upload_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "client/lib/npy.h"

namespace pricer {

UploadCommand::UploadCommand(CLI::App& app)
    : Command(app.add_subcommand("upload",
                                 "store an N x M scenario matrix on the server and print its id")) {
  verb_->add_option("file", file_, ".npy N x M matrix, float32 or float64")->required();
}

int UploadCommand::Run(PricerClient& client) {
  absl::StatusOr<NpyMatrix> matrix = ReadNpyMatrix(file_);
  if (!matrix.ok()) return Refuse(matrix.status().message());
  v1::ScenarioSet set;
  const grpc::Status status =
      client.UploadScenarios(matrix->rows, matrix->columns, matrix->values, &set);
  if (!status.ok()) return Fail(status);
  std::cout << set.id() << "\n";
  std::cerr << absl::StrFormat("%d x %d, %d bytes%s\n", set.rows(), set.columns(), set.bytes(),
                               set.existed() ? ", already stored" : "");
  return 0;
}

}  // namespace pricer
