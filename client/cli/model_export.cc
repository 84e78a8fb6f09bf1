#include "client/cli/model_export.h"

#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/model_file.h"
#include "nlohmann/json.hpp"
#include "translate/json.h"
#include "translate/onnx_export.h"

namespace sparrow::cli {
namespace {

const std::map<std::string, v1::ExportModelRequest::Format>& Formats() {
  static const auto* formats =
      new std::map<std::string, v1::ExportModelRequest::Format>{
          {"onnx", v1::ExportModelRequest::ONNX},
          {"json", v1::ExportModelRequest::JSON},
          {"proto", v1::ExportModelRequest::PROTO}};
  return *formats;
}

// The model file's model in `format`, converted in this process.
absl::StatusOr<v1::ExportModelResponse> ExportLocal(
    const std::string& path, v1::ExportModelRequest::Format format) {
  absl::StatusOr<v1::TrainedModel> model = ReadModel(path);
  if (!model.ok()) return model.status();
  v1::ExportModelResponse out;
  if (format == v1::ExportModelRequest::ONNX) {
    absl::StatusOr<std::string> onnx = translate::ExportOnnx(*model);
    if (!onnx.ok()) return onnx.status();
    out.set_data(*std::move(onnx));
  } else if (format == v1::ExportModelRequest::JSON) {
    out.set_data(translate::ToJson(*model));
  } else {
    out.set_data(model->SerializeAsString());
  }
  out.set_partial(model->partial());
  out.set_termination(model->termination());
  out.set_epochs(model->epochs());
  return out;
}

}  // namespace

void ModelExportCommand::AddTo(CLI::App* model) {
  command_ = model->add_subcommand(
      "export",
      "Write a trained model in another format: onnx (runs in any ONNX "
      "runtime; docs/onnx.md), json or proto. The model of a job on "
      "sparrowd, or a model file with --local.\n"
      "Examples:\n"
      "  sparrow model export job-1a2b3c4d5e6f7a8b --format onnx -o "
      "model.onnx\n"
      "  sparrow model export --local --model model.json -o model.onnx");
  command_->add_option("job", job_, "Job id (without --local)");
  command_->add_flag("--local", local_,
                     "Convert a model file in this process (--model)");
  command_->add_option("--model", model_path_,
                       "With --local: model file from `run -o` or `model "
                       "get` (.json or binary protobuf)");
  command_->add_option("--format", format_, "onnx (default), json or proto")
      ->check(CLI::IsMember({"onnx", "json", "proto"}));
  AddOutputFileOption(command_, &out_, "File to write")->required();
  command_->add_flag("--json", json_, "Print a JSON summary");
  connection_.AddTo(command_);
}

int ModelExportCommand::Run() {
  const v1::ExportModelRequest::Format format = Formats().at(format_);
  absl::StatusOr<v1::ExportModelResponse> exported;
  if (local_) {
    if (model_path_.empty() || !job_.empty()) {
      return Fail(absl::InvalidArgumentError(
          "--local converts a model file: give --model FILE and no job"));
    }
    exported = ExportLocal(model_path_, format);
  } else {
    if (job_.empty()) {
      return Fail(absl::InvalidArgumentError(
          "give the job whose model to export, or --local --model FILE"));
    }
    auto client = connection_.Connect();
    if (!client.ok()) return Fail(client.status());
    exported = (*client)->ExportModel(job_, format);
  }
  if (!exported.ok()) return Fail(exported.status());
  const std::string source = local_ ? model_path_ : job_;
  return WriteExported(*exported, absl::StrCat(format_, " model of ", source),
                       out_, {{"source", source}, {"format", format_}}, json_);
}

int WriteExported(const v1::ExportModelResponse& exported,
                  const std::string& what, const std::string& path,
                  nlohmann::json summary, bool json) {
  std::ofstream out(path, std::ios::binary);
  out << exported.data();
  out.close();
  if (!out) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("cannot write the model to ", path)));
  }
  if (json) {
    summary["file"] = path;
    summary["bytes"] = exported.data().size();
    summary["partial"] = exported.partial();
    summary["termination"] = exported.termination();
    summary["epochs"] = exported.epochs();
    std::cout << summary.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << absl::StrFormat("%s written to %s (%d bytes)\n", what, path,
                               exported.data().size());
  if (exported.partial()) {
    std::cout << absl::StrFormat(
        "note: the run did not finish (%s); this is the model it had reached "
        "after %d epochs\n",
        exported.termination(), exported.epochs());
  }
  return kExitOk;
}

}  // namespace sparrow::cli
