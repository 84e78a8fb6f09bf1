// What every `sparrow` subcommand shares: exit codes, error printing, file
// reading, and the connection flags of the remote subcommands.
#ifndef SPARROW_CLIENT_CLI_COMMON_H_
#define SPARROW_CLIENT_CLI_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/lib/client.h"

namespace sparrow::cli {

// 0 success; 1 the job failed or was cancelled (or a local run diverged or
// was interrupted); 2 usage or input error; 3 server or connection error.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitServer = 3;

// Prints "sparrow: error: <message>" to stderr and returns the exit code for
// the status: 3 when the server could not be reached or failed
// (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, UNKNOWN, DATA_LOSS), 2 otherwise.
int Fail(const absl::Status& status);

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const std::string& what);

// Adds `-o,--output` to `command`, storing into `path`: a file name, not
// empty and not "-" (which would otherwise make a file named "-"; every
// output here is a file, never standard output).
CLI::Option* AddOutputFileOption(CLI::App* command, std::string* path,
                                 const std::string& description);

// Prints what `predict` printed: "predicted N samples: BFR .., RMSE .. ->
// FILE" and the initial state of a state-space simulation, or the same as
// JSON. Returns kExitOk.
int PrintPrediction(int64_t samples, std::optional<double> bfr,
                    std::optional<double> rmse, const std::string& file,
                    bool json, const std::vector<double>& x0 = {});

// --server / --token / --tls / --tls-ca, defaulting to SPARROW_ADDR and
// SPARROW_TOKEN.
struct ConnectionFlags {
  std::string server;
  std::string token;
  bool tls = false;
  std::string tls_ca;

  void AddTo(CLI::App* command);
  // The server address: --server, else SPARROW_ADDR, else the client's
  // default.
  std::string Address() const;
  absl::StatusOr<std::unique_ptr<client::Client>> Connect() const;
};

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_COMMON_H_
