// How the remote subcommands show jobs and their progress: state names,
// progress and metrics lines, and the `status` text.
#ifndef SPARROW_CLIENT_CLI_JOB_TEXT_H_
#define SPARROW_CLIENT_CLI_JOB_TEXT_H_

#include <string>
#include <vector>

#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/model.pb.h"

namespace sparrow::cli {

std::string Lower(const std::string& s);
// "running", "succeeded", ...
std::string StateName(v1::Job::State s);
// 0 for a succeeded job, 1 otherwise.
int ExitForState(v1::Job::State s);
// Iterations the job will run at most (epochs, or SBDL outer iterations), for
// the ETA; 0 when unknown.
int IterationBudget(const v1::JobSpec& spec);
// The same for each trial of the spec's sweep, by trial index (a grid over
// stopping.max_epochs or stages gives each its own); empty without a sweep.
std::vector<int> TrialBudgets(const v1::JobSpec& spec);
// "12.3s", "4m05s", "2h10m"; "-" when not finite.
std::string FormatSeconds(double s);
// One human-readable line of an event.
std::string EventLine(const v1::ProgressEvent& e, int budget);
// The set (non-zero) and finite metrics a trained model carries, as
// "train_rmse 0.762, test_rmse 1.96, ...".
std::string MetricsLine(const v1::Metrics& m);
// An ended job's test metric from its model: "acc 91.23%" for a classifier,
// else "rmse 0.0123 bfr 95.1" (BFR for sequence models); "" when none, and
// "(partial)" after a cancelled or failed job's model.
std::string TestMetric(const v1::Job& j);
// The value as %.5g, or "-" when the job has not reported it.
std::string OrDash(bool has, double value);
// `sparrow status`: the job's state, progress, summary and history, and a
// sweep job's table of trials.
void PrintJob(const v1::Job& job);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_JOB_TEXT_H_
