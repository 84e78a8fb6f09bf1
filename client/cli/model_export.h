// `sparrow model export`: a trained model as a file in another format —
// ONNX (docs/onnx.md), protobuf JSON or binary protobuf — from a job on
// sparrowd, or from a model file with --local.
#ifndef SPARROW_CLIENT_CLI_MODEL_EXPORT_H_
#define SPARROW_CLIENT_CLI_MODEL_EXPORT_H_

#include <string>

#include "CLI/CLI.hpp"
#include "client/cli/common.h"
#include "nlohmann/json.hpp"

namespace sparrow::cli {

// Writes an exported model's bytes to `path`, then prints "<what> written to
// PATH (N bytes)" and, for a partial model, a note; with `json`, `summary`
// plus the file's fields (file, bytes, partial, termination, epochs). The
// exit code. Shared by `model get` and `model export`.
int WriteExported(const v1::ExportModelResponse& exported,
                  const std::string& what, const std::string& path,
                  nlohmann::json summary, bool json);

class ModelExportCommand {
 public:
  // Registers `export` under the `model` command.
  void AddTo(CLI::App* model);
  bool parsed() const { return command_ != nullptr && command_->parsed(); }
  // Runs it; the exit code.
  int Run();

 private:
  CLI::App* command_ = nullptr;
  ConnectionFlags connection_;
  std::string job_;
  bool local_ = false;
  std::string model_path_;
  std::string format_ = "onnx";
  std::string out_;
  bool json_ = false;
};

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_MODEL_EXPORT_H_
