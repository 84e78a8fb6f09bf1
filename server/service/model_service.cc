#include "server/service/model_service.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/util/status_macros.h"
#include "translate/images.h"
#include "translate/json.h"
#include "translate/onnx_export.h"
#include "translate/predict.h"

namespace sparrow::server {

absl::StatusOr<v1::TrainedModel> ModelService::Load(const std::string& tenant,
                                                    const std::string& job_id) {
  v1::Job job;
  return deps_.jobs->GetModel(tenant, job_id, &job);
}

grpc::ServerUnaryReactor* ModelService::Get(
    grpc::CallbackServerContext* context, const v1::GetModelRequest* request,
    v1::TrainedModel* response) {
  return RunUnary(deps_, context, "ModelService.Get",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_ASSIGN_OR_RETURN(*response,
                                             Load(tenant, request->job_id()));
                    return absl::OkStatus();
                  });
}

namespace {

// RESOURCE_EXHAUSTED unless an answer of `how` ("about", "exactly") `bytes`
// fits in one message; `what` names the answer, `advice` (may be empty) what
// to do instead.
absl::Status CheckMessageSize(int64_t bytes, const Limits& limits,
                              const std::string& what, const char* how,
                              const std::string& advice) {
  // The response's other fields and framing.
  constexpr int64_t kOverhead = 1024;
  if (bytes + kOverhead <= limits.max_message_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s would be %s %.1f MiB, more than the largest message this server "
      "sends, %.1f MiB (sparrowd --max-message-bytes)%s",
      what, how, bytes / 1048576.0, limits.max_message_bytes / 1048576.0,
      advice));
}

absl::Status CheckAnswerSize(int64_t bytes, int64_t rows, int64_t values,
                             const Limits& limits, const char* how) {
  return CheckMessageSize(
      bytes, limits,
      absl::StrFormat("the predictions for %d rows x %d values", rows, values),
      how, "; predict fewer rows per call");
}

// The CSV answer of a CSV request.
absl::Status PredictCsv(const v1::TrainedModel& model,
                        const v1::PredictRequest& request, const Limits& limits,
                        v1::PredictResponse* response) {
  // Refuse an answer too large to send before spending seconds computing it;
  // check the exact size after.
  const int64_t rows = translate::CountCsvDataRows(request.csv());
  const int64_t values =
      int64_t{model.num_outputs()} * (request.intervals() ? 3 : 1);
  SPARROW_RETURN_IF_ERROR(
      CheckAnswerSize(translate::EstimateCsvBytes(rows, values), rows, values,
                      limits, "about"));
  translate::PredictOptions options;
  options.one_step = request.one_step();
  options.intervals = request.intervals();
  options.x0_samples = request.x0_samples();
  switch (request.initial_state()) {
    case v1::PredictRequest::X0_ESTIMATE:
      break;
    case v1::PredictRequest::X0_ZERO:
      options.initial_state = translate::PredictOptions::InitialState::kZero;
      break;
    case v1::PredictRequest::X0_GIVEN:
      options.initial_state = translate::PredictOptions::InitialState::kGiven;
      options.x0.assign(request.x0().begin(), request.x0().end());
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("initial_state is ", request.initial_state(),
                       "; use X0_ESTIMATE (0), X0_ZERO (1) or X0_GIVEN (2)"));
  }
  if (options.initial_state !=
          translate::PredictOptions::InitialState::kGiven &&
      request.x0_size() > 0) {
    return absl::InvalidArgumentError(
        "x0 is set but initial_state is not X0_GIVEN; set both or neither");
  }
  SPARROW_ASSIGN_OR_RETURN(translate::PredictOutput out,
                           translate::Predict(model, request.csv(), options));
  std::string csv = out.Csv();
  SPARROW_RETURN_IF_ERROR(CheckAnswerSize(static_cast<int64_t>(csv.size()),
                                          rows, values, limits, "exactly"));
  response->set_csv(std::move(csv));
  response->set_samples(out.y.cols());
  if (out.bfr.has_value()) response->set_bfr(*out.bfr);
  if (out.rmse.has_value()) response->set_rmse(*out.rmse);
  response->mutable_x0()->Add(out.x0.begin(), out.x0.end());
  return absl::OkStatus();
}

// The class and class probabilities of each image of an image request.
absl::Status PredictImages(const v1::TrainedModel& model,
                           const v1::PredictRequest& request,
                           const Limits& limits,
                           v1::PredictResponse* response) {
  if (!request.csv().empty()) {
    return absl::InvalidArgumentError(
        "the request has both csv and images; send one of them");
  }
  SPARROW_ASSIGN_OR_RETURN(const core::data::ImageSet images,
                           translate::ParsePredictImages(request.images()));
  if (images.size() > translate::kMaxPredictImages) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the request has %d images; ModelService.Predict takes at most %d "
        "per request (translate::kMaxPredictImages); send them in batches",
        images.size(), translate::kMaxPredictImages));
  }
  SPARROW_ASSIGN_OR_RETURN(const translate::ImagePredictions out,
                           translate::PredictImages(model, images));
  const Eigen::MatrixXd& p = out.probabilities;
  for (Eigen::Index j = 0; j < p.cols(); ++j) {
    v1::ImagePrediction* image = response->add_images();
    image->set_label(out.labels[j]);
    image->set_probability(p(out.labels[j], j));
    for (Eigen::Index c = 0; c < p.rows(); ++c) {
      image->add_probabilities(p(c, j));
    }
  }
  response->set_samples(p.cols());
  const auto bytes = static_cast<int64_t>(response->ByteSizeLong());
  return CheckAnswerSize(bytes, p.cols(), p.rows(), limits, "exactly");
}

// RESOURCE_EXHAUSTED before building an export that this server could not
// send: an estimate from the stored model's size (ONNX holds the parameters,
// 8 bytes each; protobuf JSON writes each as up to 24 characters).
absl::Status CheckExportSize(const v1::TrainedModel& model,
                             v1::ExportModelRequest::Format format,
                             const Limits& limits) {
  const auto stored = static_cast<int64_t>(model.ByteSizeLong());
  const int64_t params = model.parameters_size();
  int64_t bytes = stored;
  if (format == v1::ExportModelRequest::ONNX) bytes = 8 * params + 16384;
  if (format == v1::ExportModelRequest::JSON) bytes = 3 * stored;
  return CheckMessageSize(
      bytes, limits,
      absl::StrFormat("the exported model of %d parameters", params), "about",
      "");
}

absl::Status ExportTo(const v1::TrainedModel& model,
                      v1::ExportModelRequest::Format format,
                      v1::ExportModelResponse* response) {
  if (format == v1::ExportModelRequest::JSON) {
    response->set_data(translate::ToJson(model));
    response->set_content_type("application/json");
  } else if (format == v1::ExportModelRequest::ONNX) {
    SPARROW_ASSIGN_OR_RETURN(*response->mutable_data(),
                             translate::ExportOnnx(model));
    response->set_content_type("application/onnx");
  } else {
    response->set_data(model.SerializeAsString());
    response->set_content_type("application/x-protobuf");
  }
  response->set_partial(model.partial());
  response->set_termination(model.termination());
  response->set_epochs(model.epochs());
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* ModelService::Export(
    grpc::CallbackServerContext* context, const v1::ExportModelRequest* request,
    v1::ExportModelResponse* response) {
  return RunUnary(
      deps_, context, "ModelService.Export",
      [&](const std::string& tenant) -> absl::Status {
        if (!v1::ExportModelRequest::Format_IsValid(request->format())) {
          return absl::InvalidArgumentError(
              absl::StrCat("format is ", request->format(),
                           "; use PROTO (1), JSON (2) or ONNX (3)"));
        }
        SPARROW_ASSIGN_OR_RETURN(const v1::TrainedModel model,
                                 Load(tenant, request->job_id()));
        SPARROW_RETURN_IF_ERROR(
            CheckExportSize(model, request->format(), *deps_.limits));
        return ExportTo(model, request->format(), response);
      });
}

grpc::ServerUnaryReactor* ModelService::Predict(
    grpc::CallbackServerContext* context, const v1::PredictRequest* request,
    v1::PredictResponse* response) {
  return RunUnary(deps_, context, "ModelService.Predict",
                  [&](const std::string& tenant) -> absl::Status {
                    SPARROW_ASSIGN_OR_RETURN(v1::TrainedModel model,
                                             Load(tenant, request->job_id()));
                    if (!request->images().empty()) {
                      return PredictImages(model, *request, *deps_.limits,
                                           response);
                    }
                    return PredictCsv(model, *request, *deps_.limits, response);
                  });
}

}  // namespace sparrow::server
