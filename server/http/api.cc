#include "server/http/api.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "server/http/proto_json.h"
#include "server/service/common.h"
#include "server/status.h"

namespace sparrow::server::http {
namespace {

using nlohmann::json;

constexpr size_t kMaxCachedFits = 16;

Reply JsonReply(const json& j, int status = 200) {
  Reply r;
  r.status = status;
  r.body = JsonText(j);
  return r;
}

absl::StatusOr<v1::Job::State> ParseState(const std::string& text) {
  if (text.empty()) return v1::Job::STATE_UNSPECIFIED;
  v1::Job::State state;
  if (!v1::Job::State_Parse(text, &state) ||
      state == v1::Job::STATE_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state is '", text,
        "'; use one of QUEUED, RUNNING, CANCELLING, SUCCEEDED, FAILED, "
        "CANCELLED, or leave it out for all"));
  }
  return state;
}

absl::StatusOr<int> ParsePageSize(const std::string& text) {
  int size = 0;
  if (!text.empty() && !absl::SimpleAtoi(text, &size)) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size is '", text, "'; it must be an integer"));
  }
  return PageSize(size);
}

}  // namespace

std::string JsonText(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

int HttpStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

Reply ErrorReply(const absl::Status& status, int http_status) {
  // The gRPC mapping keeps internal details out of the message.
  const std::string message = ToGrpcStatus(status).error_message();
  if (http_status == 0) http_status = HttpStatus(status.code());
  return JsonReply({{"error",
                     {{"code", http_status},
                      {"status", absl::StatusCodeToString(status.code())},
                      {"message", message}}}},
                   http_status);
}

absl::StatusOr<int> ParsePoints(const std::string& text) {
  if (text.empty()) return kDefaultPoints;
  int points = 0;
  if (!absl::SimpleAtoi(text, &points) || points < 2 || points > kMaxPoints) {
    return absl::InvalidArgumentError(
        absl::StrCat("points is '", text, "'; it must be an integer in [2, ",
                     kMaxPoints, "]"));
  }
  return points;
}

Api::Api(Store* store, JobManager* jobs) : store_(store), jobs_(jobs) {}

Reply Api::ListJobs(const std::string& tenant, const std::string& page_size,
                    const std::string& page_token, const std::string& state) {
  auto size = ParsePageSize(page_size);
  if (!size.ok()) return ErrorReply(size.status());
  auto parsed_state = ParseState(state);
  if (!parsed_state.ok()) return ErrorReply(parsed_state.status());
  auto page = store_->ListJobs(tenant, *parsed_state, *size, page_token);
  if (!page.ok()) return ErrorReply(page.status());
  json jobs = json::array();
  for (const v1::Job& job : page->items) jobs.push_back(JobSummary(job));
  return JsonReply(
      {{"jobs", std::move(jobs)}, {"next_page_token", page->next_page_token}});
}

Reply Api::GetJob(const std::string& tenant, const std::string& id) {
  auto job = jobs_->GetJob(tenant, id);
  if (!job.ok()) return ErrorReply(job.status());
  return JsonReply({{"summary", JobSummary(*job)}, {"job", ProtoJson(*job)}});
}

Reply Api::Series(const std::string& tenant, const std::string& id,
                  const std::string& points_text) {
  auto points = ParsePoints(points_text);
  if (!points.ok()) return ErrorReply(points.status());
  auto job = jobs_->GetJob(tenant, id);
  if (!job.ok()) return ErrorReply(job.status());
  auto series = LoadSeries(store_, id, job->last_seq(), *points);
  if (!series.ok()) return ErrorReply(series.status());
  return JsonReply(SeriesJson(*series));
}

Reply Api::Model(const std::string& tenant, const std::string& id) {
  v1::Job job;
  auto model = jobs_->GetModel(tenant, id, &job);
  if (!model.ok()) return ErrorReply(model.status());
  auto view = ModelJson(*model);
  return view.ok() ? JsonReply(*view) : ErrorReply(view.status());
}

absl::StatusOr<std::shared_ptr<const Fit>> Api::CachedFit(
    const std::string& tenant, const std::string& id) {
  v1::Job job;
  SPARROW_ASSIGN_OR_RETURN(v1::TrainedModel model,
                           jobs_->GetModel(tenant, id, &job));
  {
    std::lock_guard<std::mutex> lock(fit_mu_);
    auto it = fits_.find(id);
    if (it != fits_.end()) return it->second;
  }
  SPARROW_ASSIGN_OR_RETURN(JobFiles files,
                           ReadJobFiles(store_, tenant, job.spec()));
  SPARROW_ASSIGN_OR_RETURN(http::Fit fit, ComputeFit(job.spec(), files, model));
  auto shared = std::make_shared<const http::Fit>(std::move(fit));
  std::lock_guard<std::mutex> lock(fit_mu_);
  if (fits_.size() >= kMaxCachedFits) fits_.erase(fits_.begin());
  fits_[id] = shared;
  return shared;
}

Reply Api::Fit(const std::string& tenant, const std::string& id,
               const std::string& points_text) {
  auto points = ParsePoints(points_text);
  if (!points.ok()) return ErrorReply(points.status());
  auto fit = CachedFit(tenant, id);
  if (!fit.ok()) return ErrorReply(fit.status());
  return JsonReply(FitJson(**fit, *points));
}

Reply Api::Cancel(const std::string& tenant, const std::string& id) {
  auto job = jobs_->Cancel(tenant, id);
  if (!job.ok()) return ErrorReply(job.status());
  return JsonReply(JobSummary(*job));
}

}  // namespace sparrow::server::http
