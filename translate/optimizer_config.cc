#include "translate/optimizer_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"

namespace sparrow::translate {
namespace {

void ToBatch(const v1::BatchOptions& b, core::TrainConfig* c) {
  c->batch_size = b.batch_size();
  c->bptt_window = b.bptt_window();
  c->shuffle = !b.no_shuffle();
}

// ADMM settings of nails/nailm (0 = default): N_ADMM 250, rho 1 (group Lasso:
// 10 tau_g, Bemporad Sec. 5.4), E = 1.
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
  c->admm.iterations = o.admm_iterations() == 0 ? 250 : o.admm_iterations();
  c->admm.inner_epochs = o.epochs_per_admm() == 0 ? 1 : o.epochs_per_admm();
  c->admm.keep_best = o.admm_keep_best();
  double rho = o.admm_rho();
  if (rho == 0) {
    rho = c->penalty.kind == core::TrainConfig::Penalty::Kind::kGroupLasso &&
                  c->penalty.tau > 0
              ? 10.0 * c->penalty.tau
              : 1.0;
  }
  c->admm.rho = rho;
  return absl::OkStatus();
}

// Worker threads of nails/nailm (0 = 1).
template <typename GaussNewtonProto>
absl::Status ToThreads(const GaussNewtonProto& o, absl::string_view field,
                       core::TrainConfig* c) {
  if (o.threads() < 0) return core::OptionError(field, o.threads(), ">= 0");
  c->threads = o.threads() == 0 ? 1 : o.threads();
  return absl::OkStatus();
}

void ToSgd(const v1::SgdOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kSgd;
  c->first_order.learning_rate =
      o.learning_rate() == 0 ? 0.01 : o.learning_rate();
  c->first_order.momentum = o.momentum();
  c->first_order.nesterov = o.nesterov();
  ToBatch(o.batch(), c);
}

void ToAdam(const v1::AdamOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kAdam;
  core::FirstOrderOptions& f = c->first_order;
  if (o.learning_rate() != 0) f.learning_rate = o.learning_rate();
  if (o.has_beta1()) f.beta1 = o.beta1();
  if (o.has_beta2()) f.beta2 = o.beta2();
  if (o.epsilon() != 0) f.epsilon = o.epsilon();
  f.amsgrad = o.amsgrad();
  ToBatch(o.batch(), c);
}

void ToLbfgs(const v1::LbfgsOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kLbfgs;
  if (o.memory() != 0) c->lbfgs.memory = o.memory();
  if (o.gradient_tolerance() != 0) {
    c->lbfgs.gradient_tolerance = o.gradient_tolerance();
  }
  if (o.max_line_search() != 0) c->lbfgs.max_line_search = o.max_line_search();
}

absl::Status ToNails(const v1::NailsOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kNails;
  core::GaussNewtonOptions& g = c->gauss_newton;
  if (o.c1() != 0) g.c1 = o.c1();
  if (o.sigma() != 0) g.sigma = o.sigma();
  if (o.max_backtracks() != 0) g.max_backtracks = o.max_backtracks();
  if (o.has_min_cosine()) g.min_cosine = o.min_cosine();
  SPARROW_RETURN_IF_ERROR(ToThreads(o, "optimizer.nails.threads", c));
  SPARROW_RETURN_IF_ERROR(ToAdmm(o, "optimizer.nails.", c));
  if (o.qr()) g.solver = core::GaussNewtonOptions::Solver::kQr;
  return absl::OkStatus();
}

absl::Status ToNailm(const v1::NailmOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kNailm;
  core::GaussNewtonOptions& g = c->gauss_newton;
  if (o.lambda0() != 0) g.lambda0 = o.lambda0();
  if (o.c2() != 0) g.c2 = o.c2();
  if (o.c3() != 0) g.c3 = o.c3();
  if (o.max_trials() != 0) g.max_trials = o.max_trials();
  SPARROW_RETURN_IF_ERROR(ToThreads(o, "optimizer.nailm.threads", c));
  SPARROW_RETURN_IF_ERROR(ToAdmm(o, "optimizer.nailm.", c));
  if (o.qr()) g.solver = core::GaussNewtonOptions::Solver::kQr;
  return absl::OkStatus();
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
  if (inner.empty() || inner == "adam") {
    return core::SbdlOptions::Inner::kProximalAdam;
  }
  if (inner == "newton") return core::SbdlOptions::Inner::kProximalNewton;
  return absl::InvalidArgumentError(absl::StrCat(
      "optimizer.sbdl.inner is '", inner, "'; use adam or newton"));
}

absl::Status ToSbdl(const v1::SbdlOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kSbdl;
  core::SbdlOptions& b = c->sbdl;
  if (!o.lambda().empty())
    b.lambda.assign(o.lambda().begin(), o.lambda().end());
  if (o.has_kappa_variance()) b.kappa_variance = o.kappa_variance();
  if (o.has_kappa_weight()) b.kappa_weight = o.kappa_weight();
  if (o.outer_iterations() < 0) {
    return core::OptionError("optimizer.sbdl.outer_iterations",
                             o.outer_iterations(), ">= 1");
  }
  if (o.outer_iterations() != 0) b.outer_iterations = o.outer_iterations();
  if (o.inner_epochs() < 0) {
    return core::OptionError("optimizer.sbdl.inner_epochs", o.inner_epochs(),
                             ">= 1");
  }
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
  return absl::OkStatus();
}

absl::Status ToB2ld(const v1::B2ldOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kB2ld;
  core::B2ldOptions& b = c->b2ld;
  if (o.epsilon() != 0) b.epsilon0 = o.epsilon();
  if (o.delta() != 0) b.epsilon_decay = o.delta();
  if (o.memory() != 0) b.memory = o.memory();
  if (o.block_iterations() != 0) b.block_iterations = o.block_iterations();
  if (o.gradient_tolerance() != 0) {
    b.gradient_tolerance = o.gradient_tolerance();
  }
  if (o.relative_decrease() != 0) b.relative_decrease = o.relative_decrease();
  if (o.armijo_gamma() != 0) b.armijo_gamma = o.armijo_gamma();
  if (o.armijo_delta() != 0) b.armijo_delta = o.armijo_delta();
  if (o.sigma() != 0) b.sigma = o.sigma();
  if (o.last_layer() == "exact") {
    b.exact_last_layer = true;
  } else if (!o.last_layer().empty() && o.last_layer() != "lbfgs") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.b2ld.last_layer is '", o.last_layer(),
                     "'; use lbfgs or exact"));
  }
  if (o.order() == "forward") {
    b.order = core::LayerOrder::kForward;
  } else if (o.order() == "reshuffled") {
    b.order = core::LayerOrder::kReshuffled;
  } else if (!o.order().empty() && o.order() != "backward") {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.b2ld.order is '", o.order(),
                     "'; use backward, forward or reshuffled"));
  }
  c->bld_rho = o.rho();
  return absl::OkStatus();
}

absl::Status ToBling(const v1::BlingOptions& o, core::TrainConfig* c) {
  c->optimizer = core::OptimizerKind::kBling;
  core::BlingOptions& b = c->bling;
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
  c->bld_rho = o.rho();
  return absl::OkStatus();
}

// The method chosen by the oneof, its options translated.
absl::Status ToMethod(const v1::OptimizerSpec& opt, core::TrainConfig* c) {
  switch (opt.method_case()) {
    case v1::OptimizerSpec::kSgd:
      ToSgd(opt.sgd(), c);
      return absl::OkStatus();
    case v1::OptimizerSpec::kAdam:
      ToAdam(opt.adam(), c);
      return absl::OkStatus();
    case v1::OptimizerSpec::kLbfgs:
      ToLbfgs(opt.lbfgs(), c);
      return absl::OkStatus();
    case v1::OptimizerSpec::kNails:
      return ToNails(opt.nails(), c);
    case v1::OptimizerSpec::kNailm:
      return ToNailm(opt.nailm(), c);
    case v1::OptimizerSpec::kSbdl:
      return ToSbdl(opt.sbdl(), c);
    case v1::OptimizerSpec::kB2Ld:
      return ToB2ld(opt.b2ld(), c);
    case v1::OptimizerSpec::kBling:
      return ToBling(opt.bling(), c);
    case v1::OptimizerSpec::kRls:
      return absl::UnimplementedError(
          "optimizer.rls is specified in the API but not available in this "
          "build yet; use sgd, adam, lbfgs, nails, nailm, sbdl, b2ld or "
          "bling");
    case v1::OptimizerSpec::METHOD_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(
      "optimizer: set one of sgd, adam, lbfgs, nails, nailm, sbdl, b2ld, "
      "bling (e.g. "
      "\"optimizer\": "
      "{\"adam\": "
      "{\"learning_rate\": 0.01}})");
}

}  // namespace

absl::Status ToOptimizer(const v1::OptimizerSpec& opt, core::TrainConfig* c) {
  SPARROW_RETURN_IF_ERROR(ToMethod(opt, c));
  if (c->batch_size < 0) {
    return core::OptionError("optimizer.*.batch.batch_size", c->batch_size,
                             ">= 0");
  }
  if (c->bptt_window < 0) {
    return core::OptionError("optimizer.*.batch.bptt_window", c->bptt_window,
                             ">= 0");
  }
  return absl::OkStatus();
}

}  // namespace sparrow::translate
