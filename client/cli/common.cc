#include "client/cli/common.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace sparrow::cli {

int Fail(const absl::Status& status) {
  std::cerr << "sparrow: error: " << status.message() << "\n";
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDataLoss:
      return kExitServer;
    default:
      return kExitUsage;
  }
}

absl::StatusOr<std::string> ReadFile(const std::string& path,
                                     const std::string& what) {
  // An ifstream opens a directory and then reads nothing from it.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot read %s '%s': it is a directory, not a file", what, path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrFormat("cannot read %s '%s': no such file or not readable "
                        "(paths are relative to the current directory)",
                        what, path));
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CLI::Option* AddOutputFileOption(CLI::App* command, std::string* path,
                                 const std::string& description) {
  return command->add_option("-o,--output", *path, description)
      ->check(
          [](const std::string& s) -> std::string {
            if (s.empty()) return "the file name is empty";
            if (s == "-") {
              return "sparrow writes this to a file, not to standard "
                     "output; give a file name (e.g. -o out.csv)";
            }
            return "";
          },
          "FILE");
}

int PrintPrediction(int64_t samples, std::optional<double> bfr,
                    std::optional<double> rmse, const std::string& file,
                    bool json, const std::vector<double>& x0) {
  nlohmann::json j = {{"samples", samples}};
  if (bfr) j["bfr"] = *bfr;
  if (rmse) j["rmse"] = *rmse;
  if (!file.empty()) j["file"] = file;
  if (!x0.empty()) j["x0"] = x0;
  if (json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << absl::StrFormat("predicted %d samples", samples);
  if (bfr) std::cout << absl::StrFormat(": BFR %.2f", *bfr);
  if (rmse) std::cout << absl::StrFormat(", RMSE %.6g", *rmse);
  if (!file.empty()) std::cout << " -> " << file;
  std::cout << "\n";
  if (!x0.empty()) {
    std::cout << "initial state x0 = "
              << absl::StrJoin(x0, ",",
                               [](std::string* out, double v) {
                                 absl::StrAppendFormat(out, "%.17g", v);
                               })
              << " (reuse it with --x0)\n";
  }
  return kExitOk;
}

void ConnectionFlags::AddTo(CLI::App* command) {
  command
      ->add_option("--server", server,
                   "sparrowd address HOST:PORT (default: $SPARROW_ADDR, "
                   "else 127.0.0.1:50051)")
      ->check(
          [](const std::string& s) -> std::string {
            // Empty (say, from an unset shell variable) would otherwise
            // fall back to the default and reach another server.
            return s.empty() ? "the address is empty: give HOST:PORT, e.g. "
                               "127.0.0.1:50051, or leave --server out to "
                               "use $SPARROW_ADDR or 127.0.0.1:50051"
                             : "";
          },
          "HOST:PORT");
  command->add_option("--token", token,
                      "Bearer token (default: $SPARROW_TOKEN)");
  command->add_flag("--tls", tls, "Connect with TLS");
  command->add_option("--tls-ca", tls_ca,
                      "PEM file of the CA that signed the server's "
                      "certificate (implies --tls; default: system roots)");
}

std::string ConnectionFlags::Address() const {
  const char* env_addr = std::getenv("SPARROW_ADDR");
  if (!server.empty()) return server;
  if (env_addr != nullptr && *env_addr != '\0') return env_addr;
  return client::ClientOptions().address;
}

absl::StatusOr<std::unique_ptr<client::Client>> ConnectionFlags::Connect()
    const {
  client::ClientOptions options;
  const char* env_token = std::getenv("SPARROW_TOKEN");
  options.address = Address();
  if (!token.empty()) {
    options.token = token;
  } else if (env_token != nullptr) {
    options.token = env_token;
  }
  options.tls = tls || !tls_ca.empty();
  options.tls_ca_file = tls_ca;
  return client::Client::Connect(options);
}

}  // namespace sparrow::cli
