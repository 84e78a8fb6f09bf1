#include "core/optim/rls/rls.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/optim/internal/epoch_loop.h"
#include "core/optim/internal/epoch_seed.h"
#include "core/optim/rls/state.h"
#include "core/util/option_error.h"

namespace sparrow::core {
namespace {

constexpr double kAdamBeta1 = 0.9, kAdamBeta2 = 0.999, kAdamEpsilon = 1e-8;

bool IsAdamBlock(const RlsOptions& o,
                 const std::vector<NetworkMatrixBlock>& blocks, size_t i) {
  return o.adam_output_layer.value_or(false) &&
         blocks[i].layer == blocks.back().layer;
}

int64_t Cols(const MatrixBlock& b) { return b.inputs + (b.bias ? 1 : 0); }

// The parameter ranges [begin, end) outside the preconditioned blocks: what
// Adam trains.
std::vector<std::pair<int, int>> AdamRanges(
    const RlsOptions& options, const std::vector<NetworkMatrixBlock>& blocks,
    int num_params) {
  std::vector<std::pair<int, int>> covered, rest;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (IsAdamBlock(options, blocks, i)) continue;
    const MatrixBlock& b = blocks[i].block;
    covered.emplace_back(b.offset,
                         b.offset + b.rows * static_cast<int>(Cols(b)));
  }
  std::sort(covered.begin(), covered.end());
  int next = 0;
  for (const auto& [begin, end] : covered) {
    if (begin > next) rest.emplace_back(next, begin);
    next = std::max(next, end);
  }
  if (next < num_params) rest.emplace_back(next, num_params);
  return rest;
}

// The size of RlsOptimizer::PackState's vector, computed without building P:
// [t, Adam m, Adam v] and per preconditioned block RlsBlock::state_size()
// (P's lower triangle, the momentum Omega, the reset count).
int64_t PackedStateSize(const RlsOptions& options,
                        const std::vector<NetworkMatrixBlock>& blocks,
                        int num_params) {
  int64_t size = 1;
  for (const auto& [begin, end] : AdamRanges(options, blocks, num_params)) {
    size += 2 * int64_t{end - begin};
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (IsAdamBlock(options, blocks, i)) continue;
    const int64_t c = Cols(blocks[i].block);
    size += c * (c + 1) / 2 + blocks[i].block.rows * c + 1;
  }
  return size;
}

// What UnpackState accepts: the packed size, finite values, and an update
// count a double holds exactly (up to 2^53).
bool StateFits(const Eigen::VectorXd& state, int64_t size) {
  return state.size() == size && state.allFinite() && state(0) >= 0 &&
         state(0) <= 9007199254740992.0;
}

// Which of its layer's blocks block i is: "" for a layer's only block, "W"
// or "V" for a recurrent layer's input and recurrent blocks.
const char* BlockPart(const std::vector<NetworkMatrixBlock>& blocks, size_t i) {
  const int layer = blocks[i].layer;
  const bool first = i == 0 || blocks[i - 1].layer != layer;
  const bool last = i + 1 == blocks.size() || blocks[i + 1].layer != layer;
  if (first && last) return "";
  return first ? "W" : "V";
}

// "layer 2" or "layer 2 (W)", for messages.
std::string BlockName(const std::vector<NetworkMatrixBlock>& blocks, size_t i) {
  const std::string part = BlockPart(blocks, i);
  return absl::StrCat("layer ", blocks[i].layer,
                      part.empty() ? "" : absl::StrCat(" (", part, ")"));
}

// "layer2" or "layer2.w", the block's key in progress extras.
std::string ExtraKey(const std::vector<NetworkMatrixBlock>& blocks, size_t i) {
  const std::string part = BlockPart(blocks, i);
  return absl::StrCat("layer", blocks[i].layer,
                      part.empty() ? "" : (part == "W" ? ".w" : ".v"));
}

}  // namespace

absl::Status RlsOptions::Validate() const {
  if (!(forgetting > 0.0 && forgetting <= 1.0)) {
    return OptionError("forgetting_factor", forgetting, "in (0, 1]");
  }
  // Larger k only shrinks every step eta / h towards 0 (h grows with k): a
  // run that learns nothing, or, with k T overflowing, P turned to NaN.
  if (!(ratio > 0.0 && ratio <= RlsOptions::kMaxRatioFactor)) {
    return OptionError("ratio_factor", ratio,
                       absl::StrCat("in (0, ", RlsOptions::kMaxRatioFactor,
                                    "] (the paper uses 0.1; a larger k makes "
                                    "the steps eta / h vanish)"));
  }
  if (eta.empty()) {
    return absl::InvalidArgumentError("eta: give one value or one per block");
  }
  for (double e : eta) {
    if (!(e > 0.0) || !std::isfinite(e)) {
      return OptionError("eta", e, "positive and finite");
    }
  }
  if (!(momentum >= 0.0 && momentum < 1.0)) {
    return OptionError("momentum", momentum, "in [0, 1)");
  }
  if (!(l1 >= 0.0) || !std::isfinite(l1)) {
    return OptionError("l1", l1, ">= 0 and finite");
  }
  if (!(clip_norm >= 0.0) || !std::isfinite(clip_norm)) {
    return OptionError("clip_norm", clip_norm, ">= 0 and finite (0 = off)");
  }
  if (!(learning_rate > 0.0) || !std::isfinite(learning_rate)) {
    return OptionError("learning_rate", learning_rate, "positive and finite");
  }
  if (!(gradient_scale > 0.0) || !std::isfinite(gradient_scale)) {
    return OptionError("gradient_scale", gradient_scale, "positive");
  }
  if (threads < 1) return OptionError("batch.threads", threads, ">= 1");
  if (max_p_bytes <= 0) {
    return OptionError("max_p_megabytes", static_cast<double>(max_p_bytes),
                       "positive");
  }
  return stop.Validate();
}

absl::Status CheckRlsBlocks(const std::vector<NetworkMatrixBlock>& blocks,
                            const RlsOptions& options) {
  size_t preconditioned = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (IsAdamBlock(options, blocks, i)) continue;
    ++preconditioned;
    const int64_t cols = Cols(blocks[i].block);
    const int64_t bytes = cols * cols * 8;
    if (bytes > options.max_p_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "max_p_megabytes: the RLS matrix P of ", BlockName(blocks, i),
          " is (n_in + 1)^2 = ", cols, "^2 = ", cols * cols, " doubles (",
          absl::StrFormat("%.1f", static_cast<double>(bytes) / (1 << 20)),
          " MiB), over the limit of ",
          absl::StrFormat("%.1f",
                          static_cast<double>(options.max_p_bytes) / (1 << 20)),
          " MiB; give the layer fewer inputs (e.g. pool before it) or raise "
          "optimizer.rls.max_p_megabytes"));
    }
  }
  if (preconditioned == 0) {
    return absl::InvalidArgumentError(
        "output_layer: the model has no layer for RLS to precondition (its "
        "only layer is the output layer, which the hybrid mode trains by "
        "Adam); add a hidden layer, set output_layer to \"rls\", or use "
        "optimizer.adam");
  }
  if (options.eta.size() != 1 && options.eta.size() != preconditioned) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eta has ", options.eta.size(),
        " values; give one, or one per block "
        "RLS preconditions (",
        preconditioned, " here, a recurrent layer counts two: W then V)"));
  }
  return absl::OkStatus();
}

RlsOptimizer::RlsOptimizer(const RlsOptions& options,
                           const std::vector<NetworkMatrixBlock>& blocks,
                           int num_params)
    : options_(options),
      grad_(num_params),
      means_(blocks.size()),
      pool_(std::make_unique<ThreadPool>(options.threads)) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const MatrixBlock& b = blocks[i].block;
    if (IsAdamBlock(options, blocks, i)) continue;
    RlsBlockOptions o;
    o.forgetting = options.forgetting;
    o.eta = options.eta[options.eta.size() == 1 ? 0 : blocks_.size()];
    o.momentum = options.momentum;
    o.l1 = options.l1;
    blocks_.push_back({static_cast<int>(i), b.offset, options.ratio * b.steps,
                       RlsBlock(b.rows, b.inputs, o, b.bias)});
    names_.push_back(ExtraKey(blocks, i));
  }
  rest_ = AdamRanges(options, blocks, num_params);
  int rest = 0;
  for (const auto& [begin, end] : rest_) rest += end - begin;
  m_.setZero(rest);
  v_.setZero(rest);
  products_.p.assign(blocks.size(), nullptr);
  for (const Preconditioned& p : blocks_) {
    products_.p[p.index] = &p.block.p_lower();
  }
}

double RlsOptimizer::ClipAndScale() {
  double factor = 1.0;
  if (options_.gradient_scale != 1.0) {
    grad_ *= options_.gradient_scale;
    factor = options_.gradient_scale;
  }
  if (options_.clip_norm > 0.0) {
    const double norm = grad_.norm();
    if (norm > options_.clip_norm) {
      grad_ *= options_.clip_norm / norm;
      factor *= options_.clip_norm / norm;
    }
  }
  return factor;
}

// Adam (Kingma & Ba, with bias correction; PyTorch's defaults) on the
// parameters outside the preconditioned blocks.
void RlsOptimizer::AdamUpdate(Eigen::VectorXd* w) {
  const double t = static_cast<double>(t_);
  const double c1 = 1.0 - std::pow(kAdamBeta1, t);
  const double c2 = 1.0 - std::pow(kAdamBeta2, t);
  const double step = options_.learning_rate / c1;
  Eigen::Index j = 0;
  for (const auto& [begin, end] : rest_) {
    const Eigen::Index n = end - begin;
    auto g = grad_.segment(begin, n).array();
    auto m = m_.segment(j, n).array();
    auto v = v_.segment(j, n).array();
    m = kAdamBeta1 * m + (1.0 - kAdamBeta1) * g;
    v = kAdamBeta2 * v + (1.0 - kAdamBeta2) * g.square();
    w->segment(begin, n).array() -= step * m / ((v / c2).sqrt() + kAdamEpsilon);
    j += n;
  }
}

double RlsOptimizer::Step(BlockObjective& objective, Eigen::VectorXd* w) {
  Rng rng(internal::EpochSeed(options_.seed, t_));
  objective.StartEpoch(*w, &rng);
  const int batches = objective.num_batches();
  double sum = 0.0;
  for (int b = 0; b < batches; ++b) {
    const double loss =
        objective.EvaluateBatchWithMeans(*w, b, &grad_, &means_, &products_);
    sum += loss;
    if (!std::isfinite(loss) || !grad_.allFinite()) {
      return std::numeric_limits<double>::infinity();
    }
    const double factor = ClipAndScale();
    ++t_;
    for (Preconditioned& p : blocks_) {
      const bool formed =
          static_cast<size_t>(p.index) < products_.formed.size() &&
          products_.formed[p.index] != 0;
      p.block.Step(means_[p.index], p.k, grad_.data() + p.offset,
                   w->data() + p.offset, pool_.get(),
                   formed ? &products_.gp[p.index] : nullptr, factor);
    }
    AdamUpdate(w);
  }
  return sum / batches;
}

void RlsOptimizer::PackState(Eigen::VectorXd* out) const {
  int64_t size = 1 + m_.size() + v_.size();
  for (const Preconditioned& p : blocks_) size += p.block.state_size();
  out->resize(size);
  (*out)(0) = static_cast<double>(t_);
  out->segment(1, m_.size()) = m_;
  out->segment(1 + m_.size(), v_.size()) = v_;
  double* next = out->data() + 1 + m_.size() + v_.size();
  for (const Preconditioned& p : blocks_) {
    p.block.PackState(next);
    next += p.block.state_size();
  }
}

bool RlsOptimizer::UnpackState(const Eigen::VectorXd& in) {
  int64_t size = 1 + m_.size() + v_.size();
  for (const Preconditioned& p : blocks_) size += p.block.state_size();
  if (!StateFits(in, size)) return false;
  t_ = static_cast<int64_t>(in(0));
  m_ = in.segment(1, m_.size());
  v_ = in.segment(1 + m_.size(), v_.size());
  const double* next = in.data() + 1 + m_.size() + v_.size();
  for (Preconditioned& p : blocks_) {
    // Sizes and finiteness were checked above, so this cannot fail.
    p.block.UnpackState(next, p.block.state_size()).IgnoreError();
    next += p.block.state_size();
  }
  return true;
}

std::vector<std::pair<std::string, double>> RlsOptimizer::Extras() const {
  std::vector<std::pair<std::string, double>> extras;
  int64_t resets = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    extras.emplace_back(absl::StrCat("rls.", names_[i], ".h"),
                        blocks_[i].block.last_h());
    extras.emplace_back(absl::StrCat("rls.", names_[i], ".trace_p"),
                        blocks_[i].block.trace());
    resets += blocks_[i].block.resets();
  }
  extras.emplace_back("rls.p_resets", static_cast<double>(resets));
  return extras;
}

Summary MinimizeRls(const RlsOptions& options, BlockObjective& objective,
                    Eigen::VectorXd* w, IterationCallback* callback) {
  RlsOptimizer optimizer(options, objective.matrix_blocks(),
                         objective.num_params());
  if (options.initial_state.size() > 0) {
    optimizer.UnpackState(options.initial_state);
  }
  Summary summary = internal::RunEpochs(
      options.stop, std::numeric_limits<double>::quiet_NaN(), optimizer,
      objective, w, callback);
  // The guard's resets change the run's course: the summary says so, not
  // only the progress extras.
  for (const auto& [name, value] : optimizer.Extras()) {
    if (name != "rls.p_resets" || value == 0) continue;
    absl::StrAppend(
        &summary.message, summary.message.empty() ? "" : "; ",
        "P was reset to the identity ", value,
        " time(s) because x^T P x was not positive or not finite "
        "(rounding); if this recurs, lower k (optimizer.rls.ratio_factor) or "
        "raise optimizer.rls.forgetting_factor towards 1");
  }
  return summary;
}

bool RlsStateFits(const RlsOptions& options,
                  const std::vector<NetworkMatrixBlock>& blocks,
                  int num_params) {
  return options.initial_state.size() == 0 ||
         StateFits(options.initial_state,
                   PackedStateSize(options, blocks, num_params));
}

}  // namespace sparrow::core
