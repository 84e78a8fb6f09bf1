#include "core/train/memory.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/models/mlp.h"
#include "core/train/methods.h"
#include "core/train/model.h"
#include "core/train/model_registry.h"
#include "core/train/models/layered.h"
#include "core/train/models/mlp.h"
#include "core/train/models/state_space_rnn.h"
#include "core/train/stages.h"
#include "core/train/trainer.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

constexpr double kDouble = sizeof(double);
// Code, stacks, allocator arenas and the small objects of a worker process.
constexpr double kProcessBytes = 64.0 * (1 << 20);

int64_t Saturate(double bytes) {
  constexpr double kMax =
      static_cast<double>(std::numeric_limits<int64_t>::max() / 2);
  return bytes >= kMax ? static_cast<int64_t>(kMax)
                       : static_cast<int64_t>(std::ceil(bytes));
}

// L-BFGS correction pairs the method keeps (at least the default 10 counted
// for every method). L-BFGS's are held up to seven times: by the solver, as
// its reported state, in the last and the sent checkpoint of a job and the
// message sending it, and on a resume in the request and the options.
int CorrectionPairs(const OptimizerOptions& o) {
  if (const auto* lbfgs = std::get_if<LbfgsOptions>(&o)) {
    return std::max(7 * lbfgs->memory, 10);
  }
  if (const auto* b2ld = std::get_if<B2ldOptions>(&o)) {
    return std::max(b2ld->memory, 10);
  }
  return 10;
}

// The matrix blocks of the network a config describes, from its shape alone
// (no data): what RLS preconditions. Empty for kinds that are not networks
// of layers.
absl::StatusOr<std::vector<NetworkMatrixBlock>> MatrixBlocks(
    const ModelConfig& config, int inputs, int outputs) {
  if (config.is<MlpKind>()) {
    const MlpSpec spec = NetworkSpec(config, inputs, outputs);
    SPARROW_RETURN_IF_ERROR(ValidateMlpSpec(spec, "model.mlp"));
    return Mlp(spec).network().matrix_blocks();
  }
  const auto* layered =
      dynamic_cast<const LayeredFamily*>(&FamilyOf(config.kind));
  if (layered == nullptr) return std::vector<NetworkMatrixBlock>();
  ModelConfig resolved = config;
  layered->Resolve(inputs, nullptr, &resolved);
  SPARROW_ASSIGN_OR_RETURN(const Network net,
                           layered->Build(resolved, inputs, outputs));
  return net.matrix_blocks();
}

// RLS keeps per preconditioned block P ((n_in + 1)^2 doubles), a momentum
// buffer and a G P product (rows x (n_in + 1) each), and puts P's lower
// triangle and the momentum into every progress record and checkpoint, which
// are held about four times over as L-BFGS's pairs are. The hybrid mode's
// output layer (Adam) keeps none. *largest is the largest block's n_in + 1.
absl::StatusOr<double> RlsBytes(const TrainConfig& config, int inputs,
                                int outputs, int64_t* largest) {
  const auto* rls = std::get_if<RlsOptions>(&config.optimizer);
  *largest = 0;
  if (rls == nullptr) return 0.0;
  SPARROW_ASSIGN_OR_RETURN(const std::vector<NetworkMatrixBlock> blocks,
                           MatrixBlocks(config.model, inputs, outputs));
  const bool adam_output =
      rls->adam_output_layer.value_or(config.loss.kind != LossKind::kMse);
  // What training checks on the built network (a P over max_p_megabytes, a
  // count of eta values), here before the run: a stage or a sweep trial
  // refused only when it starts would waste the ones before it.
  RlsOptions resolved = *rls;
  resolved.adam_output_layer = adam_output;
  SPARROW_RETURN_IF_ERROR(
      OptionsStatus(CheckRlsBlocks(blocks, resolved), "rls"));
  double bytes = 0.0;
  for (const NetworkMatrixBlock& b : blocks) {
    if (adam_output && b.layer == blocks.back().layer) continue;
    const double cols = b.block.inputs + (b.block.bias ? 1 : 0);
    const double state = cols * (cols + 1) / 2 + b.block.rows * cols;
    bytes += kDouble * (cols * cols + 2 * b.block.rows * cols + 4 * state);
    *largest = std::max<int64_t>(*largest, static_cast<int64_t>(cols));
  }
  return bytes;
}

}  // namespace

namespace {

absl::StatusOr<MemoryEstimate> EstimateStage(const TrainConfig& config,
                                             int inputs, int outputs,
                                             int64_t rows, int64_t file_bytes,
                                             int64_t window_states) {
  SPARROW_ASSIGN_OR_RETURN(int64_t params,
                           CountParameters(config.model, inputs, outputs));
  params += window_states;
  const double n = static_cast<double>(params);
  const double samples = static_cast<double>(std::max<int64_t>(rows, 0));
  const ModelFamily& family = FamilyOf(config.model.kind);
  const double width = family.ActivationWidth(config.model, inputs, outputs);
  MemoryEstimate e;
  e.process = Saturate(kProcessBytes);
  // The raw file while it is parsed, the parsed columns, their scaled copies
  // and the splits; NARX regressors once more; a linear part's subspace fit.
  e.data = Saturate(
      static_cast<double>(std::max<int64_t>(file_bytes, 0)) +
      4 * kDouble * samples * (inputs + outputs) +
      (family.BuildsRegressors() ? 2 * kDouble * samples * width : 0.0) +
      family.SetupScratchBytes(config.model, inputs, outputs));
  // Iterate, gradient, best and checkpoint copies, moments, ADMM variables,
  // L-BFGS's correction pairs, and one gradient per minibatch thread.
  const int memory = CorrectionPairs(config.optimizer);
  const int threads = config.threads > 1 ? config.threads : 0;
  // SBDL's reported state is about 11 n, held as L-BFGS's pairs are (4 times).
  const int sbdl =
      std::holds_alternative<SbdlOptions>(config.optimizer) ? 44 : 0;
  e.parameters = Saturate(kDouble * n * (12 + 2 * memory + threads + sbdl));
  // A minibatch keeps one batch of activations; Gauss-Newton's tapes and the
  // block methods' cached layer outputs keep every sample.
  const double batch =
      config.batch_size > 0 && !UsesGaussNewton(config.optimizer)
          ? std::min<double>(config.batch_size, samples)
          : samples;
  // Gauss-Newton on two or more threads keeps a second set of tapes (trials
  // run two at a time).
  const int gauss_newton_threads =
      UsesGaussNewton(config.optimizer) ? RunThreads(config) : 0;
  const double tape_sets = gauss_newton_threads >= 2 ? 2 : 1;
  e.activations = Saturate(3 * kDouble * batch * width * tape_sets);
  if (gauss_newton_threads > 0) {
    // H and its damped copy, the QR factor and its (n + m) x n stack, and one
    // H per row-building thread; plus each thread's block of 64 rows. On two
    // or more threads: the second trial's damped copy and, for one trace
    // split in time, the later half's (n + nx)^2 accumulator and the merge's
    // products and stack (about 5 n^2 more).
    const double threads = gauss_newton_threads;
    const double pairs = gauss_newton_threads >= 2 ? 5 : 0;
    e.curvature = Saturate(kDouble * n * n * (5 + threads + pairs) +
                           kDouble * n * 64 * threads);
  }
  int64_t largest_p = 0;
  SPARROW_ASSIGN_OR_RETURN(const double rls_bytes,
                           RlsBytes(config, inputs, outputs, &largest_p));
  if (rls_bytes > 0) e.curvature = Saturate(rls_bytes);
  const double total = static_cast<double>(e.process) + e.data + e.parameters +
                       e.activations + e.curvature;
  e.total = Saturate(total);
  if (rls_bytes > 0 && e.curvature >= e.data && e.curvature >= e.activations) {
    e.dominant = absl::StrFormat(
        "the RLS matrices P of its layers (the largest (n_in + 1)^2 = %d^2 "
        "doubles) and their copies in checkpoints",
        largest_p);
  } else if (e.curvature >= e.data && e.curvature >= e.activations) {
    e.dominant = absl::StrFormat(
        "the %d x %d Gauss-Newton matrices of its %d parameters", params,
        params, params);
  } else if (e.activations >= e.data) {
    e.dominant = absl::StrFormat("the activations of %d samples x %.0f units",
                                 static_cast<int64_t>(batch), width);
  } else {
    e.dominant = absl::StrFormat("the data (%d rows)", rows);
  }
  return e;
}

}  // namespace

int64_t WindowStateParameters(const TrainConfig& config, int64_t rows) {
  const auto* ss = std::get_if<StateSpaceRnnKind>(&config.model.kind);
  if (ss == nullptr || ss->rnn.initial_state != InitialState::kFree ||
      ss->subsequence_length <= 0) {
    return 0;
  }
  const int stride = ss->subsequence_stride > 0 ? ss->subsequence_stride
                                                : ss->subsequence_length;
  return int64_t{ss->rnn.nx} * (std::max<int64_t>(rows, 0) / stride + 1);
}

// A multi-stage run needs what its largest stage needs.
// Subsequences (state_space_rnn.subsequence_length) copy each training sample
// about (length + encoder window) / stride times, and the optimizers keep the
// copies' tapes and rows.
int64_t WindowedRows(const TrainConfig& config, int64_t rows) {
  const auto* ss = std::get_if<StateSpaceRnnKind>(&config.model.kind);
  if (ss == nullptr) return rows;
  // Automatic windows count as chosen: the trace lengths are not known here,
  // and they add (encoder window) / 1000 copies at most.
  const int length = SubsequenceLength(*ss, kAutoSubsequenceAbove + 1);
  if (length <= 0) return rows;
  const int stride =
      ss->subsequence_stride > 0 ? ss->subsequence_stride : length;
  const int warmup =
      ss->rnn.initial_state == InitialState::kEncoder
          ? std::max(ss->rnn.encoder.past_outputs, ss->rnn.encoder.past_inputs)
          : 0;
  const double copies =
      std::max(1.0, static_cast<double>(length + warmup) / stride);
  return static_cast<int64_t>(
      std::min(9e18, std::ceil(static_cast<double>(rows) * copies)));
}

absl::StatusOr<MemoryEstimate> EstimateMemory(const TrainConfig& config,
                                              int inputs, int outputs,
                                              int64_t rows,
                                              int64_t file_bytes) {
  const int64_t window_states = WindowStateParameters(config, rows);
  rows = WindowedRows(config, rows);
  if (!IsStaged(config)) {
    return EstimateStage(config, inputs, outputs, rows, file_bytes,
                         window_states);
  }
  MemoryEstimate largest;
  for (int k = 0; k < static_cast<int>(config.stages.size()); ++k) {
    absl::StatusOr<MemoryEstimate> e =
        EstimateStage(StageConfig(config, k), inputs, outputs, rows, file_bytes,
                      window_states);
    if (!e.ok()) {
      return absl::Status(
          e.status().code(),
          absl::StrCat("stages[", k, "]: ", e.status().message()));
    }
    if (k == 0 || e->total > largest.total) largest = *e;
  }
  return largest;
}

std::string FormatBytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrFormat("%d bytes", bytes);
  double v = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  return v < 10 && std::abs(v - std::round(v)) > 0.05
             ? absl::StrFormat("%.1f %s", v, kUnits[unit])
             : absl::StrFormat("%.0f %s", v, kUnits[unit]);
}

}  // namespace sparrow::core
