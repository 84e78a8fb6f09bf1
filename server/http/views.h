// The JSON documents of the HTTP API (docs/dashboard.md): a job's summary
// row, its downsampled series, its trained model for the model views, and the
// fit of the test split.
#ifndef SPARROW_SERVER_HTTP_VIEWS_H_
#define SPARROW_SERVER_HTTP_VIEWS_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "server/http/series.h"
#include "server/store/job_files.h"
#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/model.pb.h"

namespace sparrow::server::http {

// The runs-table row of a job, from the job record alone (the store keeps
// the best validation metric, sparsity and optimizer time up to date), so
// that listing jobs reads no events.
nlohmann::json JobSummary(const v1::Job& job);

// The series endpoint's document.
nlohmann::json SeriesJson(const Series& s);

// Architecture, sparsity and weight matrices of a trained model.
absl::StatusOr<nlohmann::json> ModelJson(const v1::TrainedModel& model);

// A model's predictions on one split against the measured outputs, at full
// resolution (samples of all traces one after the other).
struct Fit {
  std::string mode;  // "simulation" or "table"
  std::string split;
  std::vector<std::string> outputs;
  Eigen::MatrixXd measured, predicted;  // outputs x samples
  int first = 0;                        // first sample genuinely predicted
  nlohmann::json metrics;
};
// The fit of the test split (the validation split when there is no test
// split), from the job's spec, its files' contents and the model.
absl::StatusOr<Fit> ComputeFit(const v1::JobSpec& spec, const JobFiles& files,
                               const v1::TrainedModel& model);
nlohmann::json FitJson(const Fit& fit, int points);

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_VIEWS_H_
