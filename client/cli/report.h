// Reports of local training runs: one record per seed or sweep trial, JSON
// and table renderings, and the multi-seed summary (mean, std, median, best
// of each metric).
#ifndef SPARROW_CLIENT_CLI_REPORT_H_
#define SPARROW_CLIENT_CLI_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/train/trainer.h"
#include "nlohmann/json.hpp"
#include "sparrow/v1/spec.pb.h"
#include "translate/sweep.h"

namespace sparrow::cli {

struct RunReport {
  uint64_t seed = 0;
  // The run's index among the sweep's trials (a failed trial has no report,
  // so this can differ from the report's position).
  int trial = 0;
  // A sweep's trial: the swept fields and this trial's values (JSON text).
  std::vector<std::pair<std::string, std::string>> settings;
  // Metric name -> value; NaN (not applicable) entries are left out.
  std::vector<std::pair<std::string, double>> metrics;
  int epochs = 0;
  double seconds = 0.0;
  double ms_per_epoch = 0.0;
  double final_loss = 0.0;
  // The model's validation figure as the sweep chooses by it
  // (translate::SelectionOf); its error is NaN without a validation split.
  translate::Selection selection;
  // The chosen run of several: why it was chosen (translate::ChoiceBasis);
  // ReportTable prints it under the table, ReportJson as "choice".
  std::string choice;
  std::string termination;
  std::string message;
  // mlp / narx_mlp: sparsity per weight matrix and the removed lags / neurons.
  std::vector<core::LayerSparsity> layers;
  std::vector<std::string> removed;
  // The optimizer's own quantities at its last report (e.g. B2LD's gradient
  // norm and block updates per layer, ADMM's residuals).
  std::vector<std::pair<std::string, double>> extras;
  // Minibatch runs (sgd, adam) on table data: per reported epoch, "epoch",
  // "samples_per_s" and, for classifiers with a test split,
  // "test_accuracy"; empty otherwise.
  std::vector<std::pair<std::string, std::vector<double>>> per_epoch;
  // Every run: the progress records' "iteration", "loss" (normalized
  // training objective), "seconds" (optimizer time) and, where reported,
  // "validation"; all records, or every k-th (k chosen so that at most
  // kMaxHistory are kept) and the last.
  std::vector<std::pair<std::string, std::vector<double>>> loss_history;

  // The metric `name`, NaN when the run has none.
  double Metric(const std::string& name) const;
};

// Records kept in RunReport::loss_history (a 200,000-epoch run would
// otherwise print 600,000 numbers).
constexpr size_t kMaxHistory = 1000;

// `sweep`: the spec's (empty for none), whose metric `validation` reads.
RunReport MakeReport(uint64_t seed, const core::TrainResult& result,
                     const v1::Sweep& sweep);
// A single run's object, or {runs, summary, best_seed, chosen} for several
// trials (`several`: the run had more than one, even if only one has a
// report; `best` is the chosen run; a sweep's runs carry their settings, and
// the summary over them is left out when they differ in more than the seed).
nlohmann::json ReportJson(const std::vector<RunReport>& reports, int best,
                          bool several);
// One row per run (a sweep's settings first), the chosen one (`best`, -1 for
// none) marked.
std::string ReportTable(const std::vector<RunReport>& reports, int best);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_REPORT_H_
