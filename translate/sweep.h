// Sweeps (JobSpec.sweep, docs/spec.md#sweep): the trials a sweep block
// expands into, each a complete spec of its own, and the choice among their
// results on validation data. Used by `sparrow run --local`; the runner
// trains the trials and calls ChooseTrial.
#ifndef SPARROW_TRANSLATE_SWEEP_H_
#define SPARROW_TRANSLATE_SWEEP_H_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

namespace sparrow::translate {

// A sweep expands into at most this many trials (each holds a model and its
// metrics until the choice).
inline constexpr int kMaxSweepTrials = 1000;
inline constexpr int kMaxSweepPathPoints = 100;
// The trials' specs together (trials x the spec's JSON size) at most.
inline constexpr int kMaxSweepSpecBytes = 16 << 20;

struct Trial {
  int index = 0;
  uint64_t seed = 0;
  // The swept fields and the values this trial gives them, as JSON text
  // ("regularization.l1.tau", "0.1"): the grid's axes, then the path's.
  std::vector<std::pair<std::string, std::string>> settings;
  // The trial whose model this one starts from (the path's point before, for
  // the same seed and grid point), or -1.
  int warm_from = -1;
  // The trial's own spec: the sweep's values set, `seed` its seed, no sweep.
  v1::JobSpec spec;
};

// The trials of spec.sweep, in an order where each trial comes after the one
// it starts from; one trial (the spec itself) when the spec has no sweep.
// INVALID_ARGUMENT names the sweep field and says what to change: an unknown
// or unsweepable field (the data, split, seed, ...), a field set twice, a
// value the field does not take, a change of model family or loss kind, a
// path without points, more than kMaxSweepTrials trials or kMaxSweepSpecBytes
// of their specs, a grid, path or
// metric without a validation split to choose on, or a metric the model
// does not have (one-step RMSE without narx_mlp, BFR without a sequence
// model, accuracy without a classifier). The trials' specs are parsed, not
// translated: the caller runs ToTrainConfig on each.
absl::StatusOr<std::vector<Trial>> ExpandSweep(const v1::JobSpec& spec);

// "tau=0.1 seed=3": the settings' last field names and values, and the seed.
std::string TrialLabel(const Trial& trial);

// What a chosen model records of its trial (TrainedModel.sweep_trial): its
// index, label and settings, and the sweep's trial count.
v1::SweepTrialOrigin TrialOrigin(const Trial& trial, int trials);

// The validation figure sweep.metric chooses by, read from a trial's
// metrics: its field name in v1::Metrics ("validation_rmse", ...), its value
// and the error the choice compares (the value for RMSEs, 100 - the value
// for BFR and accuracy); NaN when the trial has none. METRIC_UNSPECIFIED is
// the accuracy where the trial has one, else the RMSE.
struct Selection {
  const char* name = "validation_rmse";
  double value = std::numeric_limits<double>::quiet_NaN();
  double error = std::numeric_limits<double>::quiet_NaN();
  bool higher_is_better = false;  // BFR, accuracy: error = 100 - value
};
Selection SelectionOf(const v1::Sweep& sweep, const v1::Metrics& m);

// What the choice reads of a trial's result. validation: its validation error
// (SelectionOf(...).error), NaN without validation data; train_loss: the
// final training objective; sparsity_pct: the share of zero weights.
struct TrialScore {
  bool ok = false;  // trained without error
  double validation = 0.0;
  double train_loss = 0.0;
  double sparsity_pct = 0.0;
  // A state-space model's states in use (NaN or 0 for other kinds).
  double model_order = std::numeric_limits<double>::quiet_NaN();
  int trial = -1;  // the trial's index in the sweep, for ChoiceBasis
};

// The chosen trial's index into `scores` by sweep.select (RULE_BEST: the
// lowest validation error; RULE_SPARSEST_WITHIN: the sparsest whose
// validation error is within within_pct % of the best, ties to the lower
// error; sparsest is the lowest model order where the trials have one, a
// state-space model whose group Lasso removes states, then the most zero
// weights). A seeds-only sweep without validation data is chosen by training
// loss. -1 when no trial qualifies: none trained, or a grid or path with no
// finite validation error.
int ChooseTrial(const v1::Sweep& sweep, const std::vector<TrialScore>& scores);

// Why ChooseTrial chose scores[chosen] (chosen >= 0), in words, e.g. "the best
// validation_rmse 0.26299"; "the sparsest within 20 % of the best
// validation_rmse (0.26299, trial 2): validation_rmse 0.270674"; for seeds
// without a validation split "the lowest final training loss, 0.00412 (no
// validation split)". `selection` names the figure (SelectionOf of a trial).
std::string ChoiceBasis(const v1::Sweep& sweep,
                        const std::vector<TrialScore>& scores, int chosen,
                        const Selection& selection);

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_SWEEP_H_
