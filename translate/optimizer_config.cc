#include "translate/optimizer_config.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/train/optimizer.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"

namespace sparrow::translate {
namespace {

// Threads of one run (its minibatches, or the traces of NAILS/NAILM); the
// worker process runs one job.
constexpr int kMaxBatchThreads = 64;

void ToBatch(const v1::BatchOptions& b, core::TrainConfig* c) {
  c->batch_size = b.batch_size();
  c->bptt_window = b.bptt_window();
  c->shuffle = !b.no_shuffle();
  c->threads = b.threads() == 0 ? 1 : b.threads();
}

// ADMM settings of nails/nailm; 0 keeps core::AdmmOptions' defaults (its rho
// 0 is resolved by core::AdmmRho). They need a non-smooth penalty.
template <typename GaussNewtonProto>
absl::Status ToAdmm(const GaussNewtonProto& o, absl::string_view prefix,
                    core::TrainConfig* c) {
  const bool any =
      o.admm_iterations() != 0 || o.admm_rho() != 0 || o.epochs_per_admm() != 0;
  if (c->penalty.kind == core::TrainConfig::Penalty::Kind::kNone) {
    if (any) {
      return absl::InvalidArgumentError(
          "admm_iterations/admm_rho/epochs_per_admm/admm_keep_best need a "
          "non-smooth "
          "regularization (l1, l0, group_lasso, quantization or binary)");
    }
    return absl::OkStatus();
  }
  if (o.admm_iterations() < 0) {
    return core::OptionError(absl::StrCat(prefix, "admm_iterations"),
                             o.admm_iterations(), ">= 1");
  }
  if (o.admm_rho() < 0) {
    return core::OptionError(absl::StrCat(prefix, "admm_rho"), o.admm_rho(),
                             "> 0");
  }
  if (o.admm_iterations() != 0) {
    c->admm.stop.max_iterations = o.admm_iterations();
  }
  if (o.epochs_per_admm() != 0) c->admm.inner_epochs = o.epochs_per_admm();
  c->admm.keep_best = o.admm_keep_best();
  c->admm.rho = o.admm_rho();
  return absl::OkStatus();
}

core::SgdOptions ToSgd(const v1::SgdOptions& o, const core::StopRules& stop,
                       core::TrainConfig* c) {
  core::SgdOptions f;
  if (o.learning_rate() != 0) f.learning_rate = o.learning_rate();
  f.momentum = o.momentum();
  f.nesterov = o.nesterov();
  f.clip_norm = o.clip_norm();
  f.stop = stop;
  ToBatch(o.batch(), c);
  return f;
}

// Unset / 0 fields keep core::RlsOptions' defaults (the paper's); ranges are
// checked by RlsOptions::Validate.
absl::StatusOr<core::RlsOptions> ToRls(const v1::RlsOptions& o,
                                       const core::StopRules& stop,
                                       core::TrainConfig* c) {
  core::RlsOptions f;
  if (o.has_forgetting_factor()) f.forgetting = o.forgetting_factor();
  if (o.learning_rate() != 0) f.learning_rate = o.learning_rate();
  if (o.ratio_factor() != 0) f.ratio = o.ratio_factor();
  if (o.eta_size() > 0) f.eta.assign(o.eta().begin(), o.eta().end());
  f.momentum = o.momentum();
  f.l1 = o.l1();
  f.clip_norm = o.clip_norm();
  if (o.output_layer() == "adam" || o.output_layer() == "rls") {
    f.adam_output_layer = o.output_layer() == "adam";
  } else if (!o.output_layer().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.rls.output_layer is \"", o.output_layer(),
                     "\"; use \"adam\" (hybrid mode) or \"rls\""));
  }
  // From 1 kB: a smaller limit would be a typo for one in megabytes (and
  // would turn into 0 bytes below 1 / 2^20).
  const double mb = o.max_p_megabytes();
  if (!(mb == 0 || (mb >= 0.001 && mb <= 1e9))) {
    return core::OptionError("optimizer.rls.max_p_megabytes", mb,
                             "in [0.001, 1e9], or 0 (= 1024)");
  }
  if (o.max_p_megabytes() != 0) {
    f.max_p_bytes = static_cast<int64_t>(o.max_p_megabytes() * (1 << 20));
  }
  f.stop = stop;
  ToBatch(o.batch(), c);
  return f;
}

core::AdamOptions ToAdam(const v1::AdamOptions& o, const core::StopRules& stop,
                         core::TrainConfig* c) {
  core::AdamOptions f;
  if (o.learning_rate() != 0) f.learning_rate = o.learning_rate();
  if (o.has_beta1()) f.beta1 = o.beta1();
  if (o.has_beta2()) f.beta2 = o.beta2();
  if (o.epsilon() != 0) f.epsilon = o.epsilon();
  f.amsgrad = o.amsgrad();
  f.clip_norm = o.clip_norm();
  f.stop = stop;
  ToBatch(o.batch(), c);
  return f;
}

core::LbfgsOptions ToLbfgs(const v1::LbfgsOptions& o,
                           const core::StopRules& stop) {
  core::LbfgsOptions l;
  if (o.memory() != 0) l.memory = o.memory();
  if (o.gradient_tolerance() != 0)
    l.gradient_tolerance = o.gradient_tolerance();
  if (o.max_line_search() != 0) l.max_line_search = o.max_line_search();
  l.stop = stop;
  return l;
}

// What NAILS and NAILM share: threads, ADMM, the solver, the stop rules.
template <typename Proto, typename Options>
absl::Status ToGaussNewton(const Proto& o, const core::StopRules& stop,
                           const char* prefix, Options* g,
                           core::TrainConfig* c) {
  if (o.threads() < 0 || o.threads() > kMaxBatchThreads) {
    return core::OptionError(
        absl::StrCat(prefix, "threads"), o.threads(),
        absl::StrCat("in [0, ", kMaxBatchThreads, "] (0 means 1)"));
  }
  if (o.threads() != 0) g->threads = o.threads();
  SPARROW_RETURN_IF_ERROR(ToAdmm(o, prefix, c));
  if (o.qr()) g->solver = core::GaussNewtonOptions::Solver::kQr;
  g->stop = stop;
  return absl::OkStatus();
}

absl::StatusOr<core::NailsOptions> ToNails(const v1::NailsOptions& o,
                                           const core::StopRules& stop,
                                           core::TrainConfig* c) {
  core::NailsOptions g;
  if (o.c1() != 0) g.c1 = o.c1();
  if (o.sigma() != 0) g.sigma = o.sigma();
  if (o.max_backtracks() != 0) g.max_backtracks = o.max_backtracks();
  if (o.has_min_cosine()) g.min_cosine = o.min_cosine();
  SPARROW_RETURN_IF_ERROR(ToGaussNewton(o, stop, "optimizer.nails.", &g, c));
  return g;
}

absl::StatusOr<core::NailmOptions> ToNailm(const v1::NailmOptions& o,
                                           const core::StopRules& stop,
                                           core::TrainConfig* c) {
  core::NailmOptions g;
  if (o.lambda0() != 0) g.lambda0 = o.lambda0();
  if (o.c2() != 0) g.c2 = o.c2();
  if (o.c3() != 0) g.c3 = o.c3();
  if (o.max_trials() != 0) g.max_trials = o.max_trials();
  SPARROW_RETURN_IF_ERROR(ToGaussNewton(o, stop, "optimizer.nailm.", &g, c));
  return g;
}

absl::StatusOr<core::SbdlGroups> ToSbdlGroups(const std::string& groups) {
  if (groups.empty() || groups == "element") return core::SbdlGroups::kElement;
  if (groups == "row") return core::SbdlGroups::kRow;
  if (groups == "column") return core::SbdlGroups::kColumn;
  if (groups == "tile") return core::SbdlGroups::kTile;
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.sbdl.groups is '", groups,
                   "'; use element, row, column or tile"));
}

absl::StatusOr<core::SbdlOptions::Inner> ToSbdlInner(const std::string& inner) {
  if (inner.empty() || inner == "adam")
    return core::SbdlOptions::Inner::kProximalAdam;
  if (inner == "newton") return core::SbdlOptions::Inner::kProximalNewton;
  return absl::InvalidArgumentError(absl::StrCat(
      "optimizer.sbdl.inner is '", inner, "'; use adam or newton"));
}

// SBDL counts outer iterations (sbdl.outer_iterations, not max_epochs) and
// uses only the deadline of the stopping block.
absl::StatusOr<core::SbdlOptions> ToSbdl(const v1::SbdlOptions& o,
                                         const core::StopRules& stop,
                                         core::TrainConfig* c) {
  core::SbdlOptions b;
  if (!o.lambda().empty())
    b.lambda.assign(o.lambda().begin(), o.lambda().end());
  if (o.has_kappa_variance()) b.kappa_variance = o.kappa_variance();
  if (o.has_kappa_weight()) b.kappa_weight = o.kappa_weight();
  if (o.outer_iterations() < 0)
    return core::OptionError("optimizer.sbdl.outer_iterations",
                             o.outer_iterations(), ">= 1");
  if (o.outer_iterations() != 0) b.stop.max_iterations = o.outer_iterations();
  b.stop.max_seconds = stop.max_seconds;
  if (o.inner_epochs() < 0)
    return core::OptionError("optimizer.sbdl.inner_epochs", o.inner_epochs(),
                             ">= 1");
  if (o.inner_epochs() != 0) b.inner_epochs = o.inner_epochs();
  b.noise_variance = o.noise_variance();
  SPARROW_ASSIGN_OR_RETURN(b.groups, ToSbdlGroups(o.groups()));
  if (o.tile_inputs() != 0) b.tile_inputs = o.tile_inputs();
  if (o.tile_neurons() != 0) b.tile_neurons = o.tile_neurons();
  SPARROW_ASSIGN_OR_RETURN(b.inner, ToSbdlInner(o.inner()));
  if (o.learning_rate() != 0) b.learning_rate = o.learning_rate();
  if (o.newton_damping() != 0) b.newton_damping = o.newton_damping();
  b.reweight = !o.fixed_weights();
  if (o.has_stall_iterations()) b.stall_iterations = o.stall_iterations();
  ToBatch(o.batch(), c);
  return b;
}

absl::Status ToB2ldChoices(const v1::B2ldOptions& o, core::B2ldOptions* b) {
  if (o.last_layer() == "exact") {
    b->exact_last_layer = true;
  } else if (!o.last_layer().empty() && o.last_layer() != "lbfgs") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.b2ld.last_layer is '", o.last_layer(),
                     "'; use lbfgs or exact"));
  }
  if (o.order() == "forward") {
    b->order = core::LayerOrder::kForward;
  } else if (o.order() == "reshuffled") {
    b->order = core::LayerOrder::kReshuffled;
  } else if (!o.order().empty() && o.order() != "backward") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.b2ld.order is '", o.order(),
                     "'; use backward, forward or reshuffled"));
  }
  return absl::OkStatus();
}

absl::StatusOr<core::B2ldOptions> ToB2ld(const v1::B2ldOptions& o,
                                         const core::StopRules& stop) {
  core::B2ldOptions b;
  if (o.epsilon() != 0) b.epsilon0 = o.epsilon();
  if (o.delta() != 0) b.epsilon_decay = o.delta();
  if (o.memory() != 0) b.memory = o.memory();
  if (o.block_iterations() != 0) b.block_iterations = o.block_iterations();
  if (o.gradient_tolerance() != 0)
    b.gradient_tolerance = o.gradient_tolerance();
  if (o.relative_decrease() != 0) b.relative_decrease = o.relative_decrease();
  if (o.armijo_gamma() != 0) b.armijo_gamma = o.armijo_gamma();
  if (o.armijo_delta() != 0) b.armijo_delta = o.armijo_delta();
  if (o.sigma() != 0) b.sigma = o.sigma();
  SPARROW_RETURN_IF_ERROR(ToB2ldChoices(o, &b));
  b.rho = o.rho();
  b.stop = stop;
  return b;
}

absl::StatusOr<core::BlingOptions> ToBling(const v1::BlingOptions& o,
                                           const core::StopRules& stop) {
  core::BlingOptions b;
  b.alpha0 = o.alpha();
  if (o.beta() != 0) b.beta = o.beta();
  if (o.gamma() != 0) b.gamma = o.gamma();
  if (o.epsilon() != 0) b.decay = o.epsilon();
  if (o.batch_size() != 0) b.batch_size = o.batch_size();
  b.order = o.forward_order() ? core::LayerOrder::kForward
                              : core::LayerOrder::kBackward;
  if (o.minibatch() == "stochastic") {
    b.minibatch = core::MinibatchOrder::kStochastic;
  } else if (o.minibatch() == "reshuffled") {
    b.minibatch = core::MinibatchOrder::kReshuffled;
  } else if (!o.minibatch().empty() && o.minibatch() != "incremental") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.bling.minibatch is '", o.minibatch(),
                     "'; use incremental, stochastic or reshuffled"));
  }
  b.simultaneous = o.simultaneous();
  b.rho = o.rho();
  b.stop = stop;
  return b;
}

absl::StatusOr<core::OptimizerOptions> ToMethod(const v1::OptimizerSpec& o,
                                                const core::StopRules& stop,
                                                core::TrainConfig* c) {
  switch (o.method_case()) {
    case v1::OptimizerSpec::kSgd:
      return ToSgd(o.sgd(), stop, c);
    case v1::OptimizerSpec::kAdam:
      return ToAdam(o.adam(), stop, c);
    case v1::OptimizerSpec::kLbfgs:
      return ToLbfgs(o.lbfgs(), stop);
    case v1::OptimizerSpec::kNails:
      return ToNails(o.nails(), stop, c);
    case v1::OptimizerSpec::kNailm:
      return ToNailm(o.nailm(), stop, c);
    case v1::OptimizerSpec::kSbdl:
      return ToSbdl(o.sbdl(), stop, c);
    case v1::OptimizerSpec::kB2Ld:
      return ToB2ld(o.b2ld(), stop);
    case v1::OptimizerSpec::kBling:
      return ToBling(o.bling(), stop);
    case v1::OptimizerSpec::kRls:
      return ToRls(o.rls(), stop, c);
    case v1::OptimizerSpec::METHOD_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "optimizer: set one of sgd, adam, lbfgs, nails, nailm, sbdl, b2ld, "
      "bling or rls (e.g. \"optimizer\": {\"adam\": {\"learning_rate\": "
      "0.01}})");
}

}  // namespace

// The spec's stopping block; 0 = the default (1000 iterations, report every
// one).
absl::StatusOr<core::StopRules> ToStopRules(const v1::Stopping& s) {
  core::StopRules stop;
  if (s.max_epochs() < 0)
    return core::OptionError("stopping.max_epochs", s.max_epochs(), ">= 1");
  if (s.max_epochs() != 0) stop.max_iterations = s.max_epochs();
  if (!(s.max_seconds() >= 0) || !std::isfinite(s.max_seconds()))
    return core::OptionError("stopping.max_seconds", s.max_seconds(), ">= 0");
  stop.max_seconds = s.max_seconds();
  if (!(s.tolerance() >= 0) || !std::isfinite(s.tolerance()))
    return core::OptionError("stopping.tolerance", s.tolerance(), ">= 0");
  stop.tolerance = s.tolerance();
  if (s.report_every() < 0) {
    return core::OptionError("stopping.report_every", s.report_every(), ">= 0");
  }
  if (s.report_every() != 0) stop.report_every = s.report_every();
  if (s.stall_epochs() < -1) {
    return core::OptionError("stopping.stall_epochs", s.stall_epochs(),
                             ">= 1, 0 (the default 100) or -1 (never)");
  }
  stop.stall_window = s.stall_epochs() == 0    ? 100
                      : s.stall_epochs() == -1 ? 0
                                               : s.stall_epochs();
  return stop;
}

absl::StatusOr<core::OptimizerOptions> ToOptimizer(const v1::OptimizerSpec& opt,
                                                   const core::StopRules& stop,
                                                   core::TrainConfig* c) {
  absl::StatusOr<core::OptimizerOptions> options = ToMethod(opt, stop, c);
  if (!options.ok()) return options;
  const std::string batch =
      absl::StrCat("optimizer.", core::OptimizerName(*options), ".batch.");
  if (c->batch_size < 0) {
    return core::OptionError(absl::StrCat(batch, "batch_size"), c->batch_size,
                             ">= 0");
  }
  if (c->threads < 1 || c->threads > kMaxBatchThreads) {
    return core::OptionError(
        absl::StrCat(batch, "threads"), c->threads,
        absl::StrCat("in [1, ", kMaxBatchThreads, "] (0 means 1)"));
  }
  if (c->bptt_window < 0) {
    return core::OptionError(absl::StrCat(batch, "bptt_window"), c->bptt_window,
                             ">= 0");
  }
  return options;
}

}  // namespace sparrow::translate
