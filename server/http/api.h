// The JSON API of the HTTP port (docs/dashboard.md), independent of the HTTP
// library: each call takes the caller's tenant and the request's parameters
// and returns the reply. Another tenant's job is NOT_FOUND, as in gRPC.
#ifndef SPARROW_SERVER_HTTP_API_H_
#define SPARROW_SERVER_HTTP_API_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/http/series.h"
#include "server/http/views.h"
#include "server/jobs/job_manager.h"
#include "server/store/store.h"

namespace sparrow::server::http {

struct Reply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// {"error": {"code", "status", "message"}} with the HTTP status of the
// absl code; internal errors keep their details in the log (server/status.h).
// http_status 0 = the one of status.code() (HttpStatus).
Reply ErrorReply(const absl::Status& status, int http_status = 0);
// j as compact JSON text; bytes that are not UTF-8 (which nlohmann::json
// would throw on) become U+FFFD.
std::string JsonText(const nlohmann::json& j);
int HttpStatus(absl::StatusCode code);

inline constexpr int kDefaultPoints = 2000;
inline constexpr int kMaxPoints = 20000;
// The `points` parameter: empty = kDefaultPoints, else an integer in
// [2, kMaxPoints].
absl::StatusOr<int> ParsePoints(const std::string& text);

class Api {
 public:
  Api(Store* store, JobManager* jobs);

  Reply ListJobs(const std::string& tenant, const std::string& page_size,
                 const std::string& page_token, const std::string& state);
  Reply GetJob(const std::string& tenant, const std::string& id);
  Reply Series(const std::string& tenant, const std::string& id,
               const std::string& points);
  Reply Model(const std::string& tenant, const std::string& id);
  Reply Fit(const std::string& tenant, const std::string& id,
            const std::string& points);
  Reply Cancel(const std::string& tenant, const std::string& id);

  absl::StatusOr<std::shared_ptr<const http::Fit>> CachedFit(
      const std::string& tenant, const std::string& id);

  Store* const store_;
  JobManager* const jobs_;
  std::mutex fit_mu_;
  // The fits of recently viewed jobs (a trained model never changes).
  std::map<std::string, std::shared_ptr<const http::Fit>> fits_;
};

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_API_H_
