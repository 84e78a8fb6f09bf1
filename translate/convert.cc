#include "translate/convert.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/data/csv.h"
#include "core/util/option_error.h"
#include "core/util/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/unknown_field_set.h"
#include "google/protobuf/util/json_util.h"

namespace sparrow::translate {
namespace {

using core::Activation;

absl::StatusOr<Activation> ToActivation(v1::Activation a,
                                        Activation unspecified,
                                        absl::string_view field) {
  switch (a) {
    case v1::ACTIVATION_UNSPECIFIED:
      return unspecified;
    case v1::ACTIVATION_LINEAR:
      return Activation::kLinear;
    case v1::ACTIVATION_TANH:
      return Activation::kTanh;
    case v1::ACTIVATION_SIGMOID:
      return Activation::kSigmoid;
    case v1::ACTIVATION_RELU:
      return Activation::kRelu;
    case v1::ACTIVATION_LEAKY_RELU:
      return Activation::kLeakyRelu;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(field, " has an unknown value ", a));
  }
}

std::vector<int> Sizes(const google::protobuf::RepeatedField<int32_t>& r) {
  return std::vector<int>(r.begin(), r.end());
}

absl::StatusOr<core::Loss> ToLoss(const v1::LossSpec& l) {
  core::Loss loss;
  switch (l.kind()) {
    case v1::LOSS_UNSPECIFIED:
    case v1::LOSS_MSE:
      loss.kind = core::LossKind::kMse;
      break;
    case v1::LOSS_BINARY_CROSS_ENTROPY:
      loss.kind = core::LossKind::kBinaryCrossEntropy;
      break;
    case v1::LOSS_SOFTMAX_CROSS_ENTROPY:
      loss.kind = core::LossKind::kSoftmaxCrossEntropy;
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("loss.kind has an unknown value ", l.kind()));
  }
  loss.epsilon = l.epsilon();
  SPARROW_RETURN_IF_ERROR(loss.Validate());
  return loss;
}

// Model architecture; dimensions that come from the data are filled in by the
// trainer.
absl::StatusOr<core::ModelConfig> ToModelConfig(const v1::ModelSpec& m,
                                                const core::Loss& loss) {
  core::ModelConfig c;
  const Activation default_output =
      loss.kind == core::LossKind::kBinaryCrossEntropy ? Activation::kSigmoid
                                                       : Activation::kLinear;
  if (m.init_scale() < 0 || !std::isfinite(m.init_scale())) {
    return core::OptionError("model.init_scale", m.init_scale(),
                             "positive (0 means 1)");
  }
  c.init_scale = m.init_scale() == 0 ? 1.0 : m.init_scale();
  switch (m.kind_case()) {
    case v1::ModelSpec::kMlp: {
      c.kind = core::ModelKind::kMlp;
      c.hidden = Sizes(m.mlp().hidden());
      c.bias = !m.mlp().no_bias();
      SPARROW_ASSIGN_OR_RETURN(
          c.activation, ToActivation(m.mlp().activation(), Activation::kTanh,
                                     "model.mlp.activation"));
      SPARROW_ASSIGN_OR_RETURN(
          c.output_activation,
          ToActivation(m.mlp().output_activation(), default_output,
                       "model.mlp.output_activation"));
      SPARROW_RETURN_IF_ERROR(core::ValidateMlpSpec(core::NetworkSpec(c, 1, 1),
                                                    "model.mlp",
                                                    /*limit_params=*/false));
      break;
    }
    case v1::ModelSpec::kNarxMlp: {
      const v1::NarxMlpModel& n = m.narx_mlp();
      c.kind = core::ModelKind::kNarxMlp;
      c.simulation_error = n.simulation_error();
      c.hidden = Sizes(n.hidden());
      SPARROW_ASSIGN_OR_RETURN(c.activation,
                               ToActivation(n.activation(), Activation::kTanh,
                                            "model.narx_mlp.activation"));
      c.output_activation = default_output;
      c.lags.input_lags = n.input_lags();
      c.lags.output_lags = n.output_lags();
      c.lags.feedthrough = !n.no_feedthrough();
      if (n.input_lags() < 0)
        return core::OptionError("model.narx_mlp.input_lags", n.input_lags(),
                                 ">= 0");
      if (n.output_lags() < 0) {
        return core::OptionError("model.narx_mlp.output_lags", n.output_lags(),
                                 ">= 0");
      }
      SPARROW_RETURN_IF_ERROR(core::data::ValidateNarxLags(c.lags));
      SPARROW_RETURN_IF_ERROR(core::ValidateMlpSpec(core::NetworkSpec(c, 1, 1),
                                                    "model.narx_mlp",
                                                    /*limit_params=*/false));
      break;
    }
    case v1::ModelSpec::kStateSpaceRnn: {
      const v1::StateSpaceRnnModel& r = m.state_space_rnn();
      c.kind = core::ModelKind::kStateSpaceRnn;
      core::StateSpaceRnnSpec& s = c.rnn;
      s.nx = r.nx();
      s.fx_hidden = Sizes(r.fx_hidden());
      s.fy_hidden = Sizes(r.fy_hidden());
      SPARROW_ASSIGN_OR_RETURN(
          s.activation, ToActivation(r.activation(), Activation::kTanh,
                                     "model.state_space_rnn.activation"));
      SPARROW_ASSIGN_OR_RETURN(
          s.output_activation,
          ToActivation(r.output_activation(), default_output,
                       "model.state_space_rnn.output_activation"));
      s.feedthrough = !r.no_feedthrough();
      switch (r.initial_state()) {
        case v1::INITIAL_STATE_UNSPECIFIED:
        case v1::INITIAL_STATE_FREE:
          s.initial_state = core::InitialState::kFree;
          break;
        case v1::INITIAL_STATE_ENCODER:
          s.initial_state = core::InitialState::kEncoder;
          break;
        case v1::INITIAL_STATE_ZERO:
          s.initial_state = core::InitialState::kZero;
          break;
        default:
          return absl::InvalidArgumentError(
              "model.state_space_rnn.initial_state is unknown");
      }
      s.encoder.hidden = Sizes(r.encoder().hidden());
      s.encoder.past_outputs = r.encoder().past_outputs();
      s.encoder.past_inputs = r.encoder().past_inputs();
      if (r.x0_estimation_samples() < 0) {
        return core::OptionError("model.state_space_rnn.x0_estimation_samples",
                                 r.x0_estimation_samples(),
                                 ">= 0 (0 means 100)");
      }
      c.x0_estimation_samples =
          r.x0_estimation_samples() == 0 ? 100 : r.x0_estimation_samples();
      // Sizes only, with data dimensions not known yet; the parameter count is
      // checked at submission (--max-model-params) and by the trainer.
      core::StateSpaceRnnSpec probe = s;
      probe.nu = probe.ny = 1;
      SPARROW_RETURN_IF_ERROR(
          core::ValidateStateSpaceRnnSpec(probe, "model.state_space_rnn",
                                          /*limit_params=*/false));
      break;
    }
    case v1::ModelSpec::kLstm:
    case v1::ModelSpec::kCnn:
      return absl::UnimplementedError(
          "model.lstm and model.cnn are reserved for the RLS optimizer and not "
          "trainable yet; "
          "use mlp, narx_mlp or state_space_rnn");
    case v1::ModelSpec::KIND_NOT_SET:
      return absl::InvalidArgumentError(
          "model: set one of mlp, narx_mlp, state_space_rnn (e.g. \"model\": "
          "{\"mlp\": "
          "{\"hidden\": [16]}})");
  }
  return c;
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
  if (o.admm_rho() < 0)
    return core::OptionError(absl::StrCat(prefix, "admm_rho"), o.admm_rho(),
                             "> 0");
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

void FillBatch(const v1::BatchOptions& b, core::TrainConfig* c) {
  c->batch_size = b.batch_size();
  c->bptt_window = b.bptt_window();
  c->shuffle = !b.no_shuffle();
}

v1::ChannelScaling ToProto(const core::data::Normalizer& n,
                           const std::vector<std::string>& names) {
  v1::ChannelScaling s;
  for (const std::string& name : names) s.add_names(name);
  for (int i = 0; i < n.size(); ++i) {
    s.add_mean(n.mean(i));
    s.add_scale(n.scale(i));
  }
  return s;
}

absl::StatusOr<core::data::Normalizer> FromProto(const v1::ChannelScaling& s,
                                                 int n,
                                                 absl::string_view what) {
  if (s.mean_size() != n || s.scale_size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", s.mean_size(), " means and ",
                     s.scale_size(), " scales; expected ", n));
  }
  core::data::Normalizer out;
  out.mean = Eigen::Map<const Eigen::VectorXd>(s.mean().data(), n);
  out.scale = Eigen::Map<const Eigen::VectorXd>(s.scale().data(), n);
  SPARROW_RETURN_IF_ERROR(out.Validate());
  return out;
}

// Keeps the first `fraction` of the rows covered by `ranges` (a contiguous
// prefix).
std::vector<core::data::RowRange> Prefix(
    std::vector<core::data::RowRange> ranges, double fraction) {
  int64_t total = 0;
  for (const auto& r : ranges) total += r.last - r.first + 1;
  int64_t keep = std::max<int64_t>(
      1, static_cast<int64_t>(std::llround(fraction * total)));
  std::vector<core::data::RowRange> out;
  for (auto r : ranges) {
    if (keep <= 0) break;
    r.last = std::min(r.last, r.first + keep - 1);
    keep -= r.last - r.first + 1;
    out.push_back(r);
  }
  return out;
}

// Held-out rows must never be trained on.
absl::Status Disjoint(const std::vector<core::data::RowRange>& a,
                      absl::string_view a_name,
                      const std::vector<core::data::RowRange>& b,
                      absl::string_view b_name) {
  for (const auto& x : a) {
    for (const auto& y : b) {
      const int64_t first = std::max(x.first, y.first);
      const int64_t last = std::min(x.last, y.last);
      if (first <= last) {
        return absl::InvalidArgumentError(absl::StrCat(
            b_name, " overlaps ", a_name, " at rows ", first, "-", last,
            "; held-out rows must not be used for training"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<core::data::RowRange> Ranges(
    const google::protobuf::RepeatedPtrField<v1::RowRange>& r) {
  std::vector<core::data::RowRange> out;
  for (const v1::RowRange& x : r) out.push_back({x.first(), x.last()});
  return out;
}

// Inputs and outputs are named, and test columns replace them one for one.
absl::Status CheckColumnRoles(const v1::DataSource& src) {
  if (src.inputs().empty()) {
    return absl::InvalidArgumentError(
        "data.inputs is empty; name the input columns, e.g. \"inputs\": "
        "[\"u\"]");
  }
  if (src.outputs().empty()) {
    return absl::InvalidArgumentError(
        "data.outputs is empty; name the output columns, e.g. \"outputs\": "
        "[\"y\"]");
  }
  const bool test_columns =
      !src.test_inputs().empty() || !src.test_outputs().empty();
  if (test_columns && (src.test_inputs_size() != src.inputs_size() ||
                       src.test_outputs_size() != src.outputs_size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data.test_inputs/test_outputs name ", src.test_inputs_size(), " and ",
        src.test_outputs_size(), " columns; they replace data.inputs (",
        src.inputs_size(), ") and data.outputs (", src.outputs_size(),
        ") for the test split, so give the same numbers"));
  }
  return absl::OkStatus();
}

// The file columns the spec reads: inputs, outputs, the trace column (if
// any), then the test columns (if any).
std::vector<std::string> Selectors(const v1::DataSource& src) {
  std::vector<std::string> selectors(src.inputs().begin(), src.inputs().end());
  selectors.insert(selectors.end(), src.outputs().begin(), src.outputs().end());
  if (!src.trace_column().empty()) selectors.push_back(src.trace_column());
  selectors.insert(selectors.end(), src.test_inputs().begin(),
                   src.test_inputs().end());
  selectors.insert(selectors.end(), src.test_outputs().begin(),
                   src.test_outputs().end());
  return selectors;
}

// `selected` holds the header names of the selected columns, in selector
// order. The parser keeps header names unique, so a repeated name means two
// selectors (e.g. "u" and "0") picked the same file column.
absl::Status CheckOneRolePerColumn(const std::vector<std::string>& selected) {
  for (size_t i = 0; i < selected.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (selected[i] == selected[j]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "column '", selected[i],
            "' is selected twice in data.inputs/outputs/trace_column/"
            "test_inputs/test_outputs; a column has one role"));
      }
    }
  }
  return absl::OkStatus();
}

struct SplitRows {
  std::vector<core::data::RowRange> train, validation, test;
};

// The split's row ranges over a table of `rows` data rows, checked: within
// the table, train_fraction in range, held-out rows disjoint from training.
absl::StatusOr<SplitRows> CutSplits(const v1::JobSpec& spec, int64_t rows) {
  const v1::DataSource& src = spec.data();
  const bool test_columns =
      !src.test_inputs().empty() || !src.test_outputs().empty();
  const v1::Split& split = spec.split();
  SplitRows out;
  out.train = Ranges(split.train());
  if (out.train.empty()) out.train.push_back({1, rows});
  SPARROW_RETURN_IF_ERROR(
      core::data::ValidateRanges(out.train, rows, "split.train"));
  const double fraction = split.train_fraction();
  if (fraction < 0 || fraction > 1 || !std::isfinite(fraction)) {
    return core::OptionError("split.train_fraction", fraction,
                             "in (0, 1] (0 means 1)");
  }
  if (fraction > 0 && fraction < 1) out.train = Prefix(out.train, fraction);
  out.validation = Ranges(split.validation());
  out.test = Ranges(split.test());
  if (!out.validation.empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(out.validation, rows, "split.validation"));
  }
  if (!out.test.empty()) {
    SPARROW_RETURN_IF_ERROR(
        core::data::ValidateRanges(out.test, rows, "split.test"));
  }
  // Test rows from other columns may share row numbers with the training rows.
  if (!test_columns) {
    SPARROW_RETURN_IF_ERROR(
        Disjoint(out.train, "split.train", out.test, "split.test"));
  }
  SPARROW_RETURN_IF_ERROR(
      Disjoint(out.train, "split.train", out.validation, "split.validation"));
  return out;
}

bool IsRandomSplit(const v1::Split& split) {
  return split.test_fraction() != 0 || split.validation_fraction() != 0;
}

// data.categorical names columns of the file that are inputs, outputs or test
// columns, each once; data.drop_missing and a random split are for mlp
// models, and a random split replaces the row ranges.
absl::Status CheckDataOptions(const v1::JobSpec& spec,
                              const std::vector<std::string>& header) {
  const v1::DataSource& src = spec.data();
  const bool mlp = spec.model().kind_case() == v1::ModelSpec::kMlp;
  std::vector<std::string> roles(src.inputs().begin(), src.inputs().end());
  roles.insert(roles.end(), src.outputs().begin(), src.outputs().end());
  roles.insert(roles.end(), src.test_inputs().begin(), src.test_inputs().end());
  roles.insert(roles.end(), src.test_outputs().begin(),
               src.test_outputs().end());
  SPARROW_ASSIGN_OR_RETURN(const std::vector<int> role_columns,
                           core::data::ResolveColumns(header, roles));
  std::vector<int> categorical;
  for (int i = 0; i < src.categorical_size(); ++i) {
    const std::string& selector = src.categorical(i);
    const auto column = core::data::ResolveColumns(header, {selector});
    if (!column.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.categorical[", i, "] '", selector,
          "' is not a column of the CSV: ", column.status().message()));
    }
    const int c = column->front();
    if (std::find(role_columns.begin(), role_columns.end(), c) ==
        role_columns.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.categorical[", i, "] '", selector,
          "' is not among data.inputs/outputs/test_inputs/test_outputs; only "
          "those columns can be categorical"));
    }
    const auto seen = std::find(categorical.begin(), categorical.end(), c);
    if (seen != categorical.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.categorical[", i, "] '", selector,
                       "' repeats data.categorical[",
                       seen - categorical.begin(), "]; list each column once"));
    }
    categorical.push_back(c);
  }
  if (src.drop_missing() && !mlp) {
    return absl::InvalidArgumentError(
        "data.drop_missing is for mlp models only: dropping rows from a "
        "sequence would join the samples on either side of the gap into one "
        "trace; fill the missing values or cut the traces around them");
  }

  const v1::Split& split = spec.split();
  const struct {
    const char* name;
    double value;
  } fractions[] = {{"split.test_fraction", split.test_fraction()},
                   {"split.validation_fraction", split.validation_fraction()}};
  for (const auto& f : fractions) {
    if (!(f.value >= 0 && f.value < 1)) {
      return core::OptionError(f.name, f.value,
                               "in [0, 1) (0 = no random split)");
    }
  }
  if (!IsRandomSplit(split)) {
    if (split.shuffle_seed() != 0) {
      return absl::InvalidArgumentError(
          "split.shuffle_seed is set but split.test_fraction and "
          "split.validation_fraction are 0; the seed only permutes the rows "
          "of a random split");
    }
    return absl::OkStatus();
  }
  const char* field = split.test_fraction() != 0 ? "split.test_fraction"
                                                 : "split.validation_fraction";
  if (!mlp) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        " (a random split) is for mlp models only: it would tear the "
        "sequences of a narx_mlp or state_space_rnn model apart; use "
        "split.train/validation/test row ranges"));
  }
  if (!split.train().empty() || !split.validation().empty() ||
      !split.test().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        " (a random split) cannot be combined with split.train/validation/"
        "test row ranges; give either the fractions or the ranges"));
  }
  return absl::OkStatus();
}

// The rows of table.values that hold selector i: all its indicator rows,
// except that a categorical output with two levels is the indicator of the
// second level alone.
void AppendRows(const core::data::CsvColumn& column, bool output,
                std::vector<int>* rows) {
  if (output && column.categorical && column.levels.size() == 2) {
    rows->push_back(column.first + 1);
    return;
  }
  for (int k = 0; k < column.width(); ++k) rows->push_back(column.first + k);
}

// A test column replaces a training column, so it must encode alike.
absl::Status CheckSameEncoding(const core::data::CsvColumn& train,
                               absl::string_view train_field,
                               const core::data::CsvColumn& test,
                               absl::string_view test_field) {
  if (train.categorical == test.categorical && train.levels == test.levels) {
    return absl::OkStatus();
  }
  auto describe = [](const core::data::CsvColumn& c) {
    return c.categorical ? absl::StrCat("categorical with levels ",
                                        absl::StrJoin(c.levels, ", "))
                         : std::string("numeric");
  };
  return absl::InvalidArgumentError(absl::StrCat(
      test_field, " '", test.name, "' replaces ", train_field, " '", train.name,
      "' for the test split, so it must be encoded alike, but '", test.name,
      "' is ", describe(test), " and '", train.name, "' is ", describe(train)));
}

// Keeps the rows that `complete` marks (all rows when it is empty).
std::vector<int64_t> KeepComplete(std::vector<int64_t> rows,
                                  const std::vector<bool>& complete) {
  if (complete.empty()) return rows;
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [&](int64_t r) { return !complete[r]; }),
             rows.end());
  return rows;
}

}  // namespace

absl::Status RejectUnknownFields(const google::protobuf::Message& message,
                                 const std::string& path) {
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const google::protobuf::UnknownFieldSet& unknown =
      reflection->GetUnknownFields(message);
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path.empty() ? std::string("the request") : path,
        " has a field number ", unknown.field(0).number(),
        " that this server does not know (a client built from a newer "
        "sparrow/v1 API?); remove it, or upgrade sparrowd"));
  }
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const google::protobuf::FieldDescriptor* field : fields) {
    if (field->cpp_type() !=
        google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      continue;
    }
    const std::string name =
        path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
    if (field->is_repeated()) {
      for (int i = 0; i < reflection->FieldSize(message, field); ++i) {
        SPARROW_RETURN_IF_ERROR(RejectUnknownFields(
            reflection->GetRepeatedMessage(message, field, i),
            absl::StrCat(name, "[", i, "]")));
      }
    } else {
      SPARROW_RETURN_IF_ERROR(
          RejectUnknownFields(reflection->GetMessage(message, field), name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::JobSpec> ParseJobSpecJson(absl::string_view json) {
  v1::JobSpec spec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the job spec is not valid: ",
        std::string(status.message().data(), status.message().size()),
        " (field names are those of sparrow.v1.JobSpec in "
        "proto/sparrow/v1/spec.proto)"));
  }
  return spec;
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::StatusOr<core::TrainConfig> ToTrainConfig(const v1::JobSpec& spec) {
  core::TrainConfig c;
  SPARROW_ASSIGN_OR_RETURN(c.loss, ToLoss(spec.loss()));
  SPARROW_ASSIGN_OR_RETURN(c.model, ToModelConfig(spec.model(), c.loss));
  const v1::Regularization& reg = spec.regularization();
  c.rho_x0 = reg.rho_x0();
  c.rho_theta = reg.rho_theta();
  const v1::OptimizerSpec& opt = spec.optimizer();
  using Penalty = core::TrainConfig::Penalty;
  switch (reg.penalty_case()) {
    case v1::Regularization::kL1:
      c.penalty.kind = Penalty::Kind::kL1;
      c.penalty.tau = reg.l1().tau();
      break;
    case v1::Regularization::kL0:
      c.penalty.kind = Penalty::Kind::kL0;
      c.penalty.tau = reg.l0().tau();
      break;
    case v1::Regularization::kGroupLasso:
      c.penalty.kind = Penalty::Kind::kGroupLasso;
      c.penalty.tau = reg.group_lasso().tau();
      break;
    case v1::Regularization::kQuantization:
      c.penalty.kind = Penalty::Kind::kQuantization;
      c.penalty.levels.assign(reg.quantization().levels().begin(),
                              reg.quantization().levels().end());
      if (c.penalty.levels.empty()) {
        return absl::InvalidArgumentError(
            "regularization.quantization.levels is empty; list the allowed "
            "weight values, e.g. [-0.5, -0.4, ..., 0.5]");
      }
      break;
    case v1::Regularization::kBinary:
      c.penalty.kind = Penalty::Kind::kBinary;
      break;
    case v1::Regularization::PENALTY_NOT_SET:
      break;
  }
  switch (opt.method_case()) {
    case v1::OptimizerSpec::kSgd: {
      const v1::SgdOptions& o = opt.sgd();
      c.optimizer = core::OptimizerKind::kSgd;
      c.first_order.learning_rate =
          o.learning_rate() == 0 ? 0.01 : o.learning_rate();
      c.first_order.momentum = o.momentum();
      c.first_order.nesterov = o.nesterov();
      FillBatch(o.batch(), &c);
      break;
    }
    case v1::OptimizerSpec::kAdam: {
      const v1::AdamOptions& o = opt.adam();
      c.optimizer = core::OptimizerKind::kAdam;
      core::FirstOrderOptions& f = c.first_order;
      if (o.learning_rate() != 0) f.learning_rate = o.learning_rate();
      if (o.has_beta1()) f.beta1 = o.beta1();
      if (o.has_beta2()) f.beta2 = o.beta2();
      if (o.epsilon() != 0) f.epsilon = o.epsilon();
      f.amsgrad = o.amsgrad();
      FillBatch(o.batch(), &c);
      break;
    }
    case v1::OptimizerSpec::kLbfgs: {
      const v1::LbfgsOptions& o = opt.lbfgs();
      c.optimizer = core::OptimizerKind::kLbfgs;
      if (o.memory() != 0) c.lbfgs.memory = o.memory();
      if (o.gradient_tolerance() != 0)
        c.lbfgs.gradient_tolerance = o.gradient_tolerance();
      if (o.max_line_search() != 0)
        c.lbfgs.max_line_search = o.max_line_search();
      break;
    }
    case v1::OptimizerSpec::kNails: {
      const v1::NailsOptions& o = opt.nails();
      c.optimizer = core::OptimizerKind::kNails;
      core::GaussNewtonOptions& g = c.gauss_newton;
      if (o.c1() != 0) g.c1 = o.c1();
      if (o.sigma() != 0) g.sigma = o.sigma();
      if (o.max_backtracks() != 0) g.max_backtracks = o.max_backtracks();
      if (o.has_min_cosine()) g.min_cosine = o.min_cosine();
      if (o.threads() < 0)
        return core::OptionError("optimizer.nails.threads", o.threads(),
                                 ">= 0");
      c.threads = o.threads() == 0 ? 1 : o.threads();
      SPARROW_RETURN_IF_ERROR(ToAdmm(o, "optimizer.nails.", &c));
      if (o.qr()) g.solver = core::GaussNewtonOptions::Solver::kQr;
      break;
    }
    case v1::OptimizerSpec::kNailm: {
      const v1::NailmOptions& o = opt.nailm();
      c.optimizer = core::OptimizerKind::kNailm;
      core::GaussNewtonOptions& g = c.gauss_newton;
      if (o.lambda0() != 0) g.lambda0 = o.lambda0();
      if (o.c2() != 0) g.c2 = o.c2();
      if (o.c3() != 0) g.c3 = o.c3();
      if (o.max_trials() != 0) g.max_trials = o.max_trials();
      if (o.threads() < 0)
        return core::OptionError("optimizer.nailm.threads", o.threads(),
                                 ">= 0");
      c.threads = o.threads() == 0 ? 1 : o.threads();
      SPARROW_RETURN_IF_ERROR(ToAdmm(o, "optimizer.nailm.", &c));
      if (o.qr()) g.solver = core::GaussNewtonOptions::Solver::kQr;
      break;
    }
    case v1::OptimizerSpec::kSbdl: {
      const v1::SbdlOptions& o = opt.sbdl();
      c.optimizer = core::OptimizerKind::kSbdl;
      core::SbdlOptions& b = c.sbdl;
      if (!o.lambda().empty())
        b.lambda.assign(o.lambda().begin(), o.lambda().end());
      if (o.has_kappa_variance()) b.kappa_variance = o.kappa_variance();
      if (o.has_kappa_weight()) b.kappa_weight = o.kappa_weight();
      if (o.outer_iterations() < 0)
        return core::OptionError("optimizer.sbdl.outer_iterations",
                                 o.outer_iterations(), ">= 1");
      if (o.outer_iterations() != 0) b.outer_iterations = o.outer_iterations();
      if (o.inner_epochs() < 0)
        return core::OptionError("optimizer.sbdl.inner_epochs",
                                 o.inner_epochs(), ">= 1");
      if (o.inner_epochs() != 0) b.inner_epochs = o.inner_epochs();
      b.noise_variance = o.noise_variance();
      if (o.groups().empty() || o.groups() == "element") {
        b.groups = core::SbdlGroups::kElement;
      } else if (o.groups() == "row") {
        b.groups = core::SbdlGroups::kRow;
      } else if (o.groups() == "column") {
        b.groups = core::SbdlGroups::kColumn;
      } else if (o.groups() == "tile") {
        b.groups = core::SbdlGroups::kTile;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("optimizer.sbdl.groups is '", o.groups(),
                         "'; use element, row, column or tile"));
      }
      if (o.tile_inputs() != 0) b.tile_inputs = o.tile_inputs();
      if (o.tile_neurons() != 0) b.tile_neurons = o.tile_neurons();
      if (o.inner().empty() || o.inner() == "adam") {
        b.inner = core::SbdlOptions::Inner::kProximalAdam;
      } else if (o.inner() == "newton") {
        b.inner = core::SbdlOptions::Inner::kProximalNewton;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "optimizer.sbdl.inner is '", o.inner(), "'; use adam or newton"));
      }
      if (o.learning_rate() != 0) b.learning_rate = o.learning_rate();
      if (o.newton_damping() != 0) b.newton_damping = o.newton_damping();
      b.reweight = !o.fixed_weights();
      if (o.has_stall_iterations()) b.stall_iterations = o.stall_iterations();
      FillBatch(o.batch(), &c);
      break;
    }
    case v1::OptimizerSpec::kB2Ld: {
      const v1::B2ldOptions& o = opt.b2ld();
      c.optimizer = core::OptimizerKind::kB2ld;
      core::B2ldOptions& b = c.b2ld;
      if (o.epsilon() != 0) b.epsilon0 = o.epsilon();
      if (o.delta() != 0) b.epsilon_decay = o.delta();
      if (o.memory() != 0) b.memory = o.memory();
      if (o.block_iterations() != 0) b.block_iterations = o.block_iterations();
      if (o.gradient_tolerance() != 0) {
        b.gradient_tolerance = o.gradient_tolerance();
      }
      if (o.relative_decrease() != 0) {
        b.relative_decrease = o.relative_decrease();
      }
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
      c.bld_rho = o.rho();
      break;
    }
    case v1::OptimizerSpec::kBling: {
      const v1::BlingOptions& o = opt.bling();
      c.optimizer = core::OptimizerKind::kBling;
      core::BlingOptions& b = c.bling;
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
      c.bld_rho = o.rho();
      break;
    }
    case v1::OptimizerSpec::kRls:
      return absl::UnimplementedError(
          "optimizer.rls is specified in the API but not available in this "
          "build yet; use sgd, adam, lbfgs, nails, nailm, sbdl, b2ld or "
          "bling");
    case v1::OptimizerSpec::METHOD_NOT_SET:
      return absl::InvalidArgumentError(
          "optimizer: set one of sgd, adam, lbfgs, nails, nailm, sbdl, b2ld, "
          "bling (e.g. "
          "\"optimizer\": "
          "{\"adam\": "
          "{\"learning_rate\": 0.01}})");
  }
  if (c.batch_size < 0)
    return core::OptionError("optimizer.*.batch.batch_size", c.batch_size,
                             ">= 0");
  if (c.bptt_window < 0)
    return core::OptionError("optimizer.*.batch.bptt_window", c.bptt_window,
                             ">= 0");
  const v1::Stopping& stop = spec.stopping();
  if (stop.max_epochs() < 0)
    return core::OptionError("stopping.max_epochs", stop.max_epochs(), ">= 1");
  c.max_epochs = stop.max_epochs() == 0 ? 1000 : stop.max_epochs();
  c.max_seconds = stop.max_seconds();
  c.tolerance = stop.tolerance();
  c.patience = stop.patience();
  if (stop.report_every() < 0) {
    return core::OptionError("stopping.report_every", stop.report_every(),
                             ">= 0");
  }
  c.report_every = stop.report_every() == 0 ? 1 : stop.report_every();
  switch (spec.normalization()) {
    case v1::NORMALIZATION_NONE:
      c.scaling = core::TrainConfig::Scaling::kNone;
      break;
    case v1::NORMALIZATION_MINMAX:
      c.scaling = core::TrainConfig::Scaling::kMinMax;
      break;
    case v1::NORMALIZATION_UNSPECIFIED:
    case v1::NORMALIZATION_ZSCORE:
      c.scaling = core::TrainConfig::Scaling::kZScore;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "normalization has an unknown value ", spec.normalization(),
          "; use NORMALIZATION_ZSCORE, NORMALIZATION_MINMAX or "
          "NORMALIZATION_NONE"));
  }
  c.seed = spec.seed();
  SPARROW_RETURN_IF_ERROR(c.Validate());
  return c;
}

absl::StatusOr<core::TrainData> LoadTrainData(const v1::JobSpec& spec,
                                              const core::TrainConfig& config,
                                              absl::string_view csv,
                                              DataSummary* summary) {
  const v1::DataSource& src = spec.data();
  const std::string_view buffer(csv.data(), csv.size());
  SPARROW_ASSIGN_OR_RETURN(const std::vector<std::string> header,
                           core::data::ParseCsvHeader(buffer));
  SPARROW_RETURN_IF_ERROR(ValidateDataSpec(spec, header, 0));
  const bool has_trace_column = !src.trace_column().empty();
  const bool test_columns =
      !src.test_inputs().empty() || !src.test_outputs().empty();
  core::data::CsvOptions options;
  options.columns = Selectors(src);
  options.categorical.assign(src.categorical().begin(),
                             src.categorical().end());
  options.keep_missing = src.drop_missing();
  SPARROW_ASSIGN_OR_RETURN(core::data::CsvTable table,
                           core::data::ParseCsv(buffer, options));
  // Selector i of Selectors(src) is table.columns[i].
  const int n_in = src.inputs_size();
  const int n_out = src.outputs_size();
  const int test_first = n_in + n_out + (has_trace_column ? 1 : 0);
  std::vector<int> inputs, outputs, test_inputs, test_outputs;
  for (int i = 0; i < n_in; ++i) AppendRows(table.columns[i], false, &inputs);
  for (int i = 0; i < n_out; ++i) {
    AppendRows(table.columns[n_in + i], true, &outputs);
  }
  if (test_columns) {
    for (int i = 0; i < n_in; ++i) {
      const core::data::CsvColumn& test = table.columns[test_first + i];
      SPARROW_RETURN_IF_ERROR(CheckSameEncoding(
          table.columns[i], absl::StrCat("data.inputs[", i, "]"), test,
          absl::StrCat("data.test_inputs[", i, "]")));
      AppendRows(test, false, &test_inputs);
    }
    for (int i = 0; i < n_out; ++i) {
      const core::data::CsvColumn& test = table.columns[test_first + n_in + i];
      SPARROW_RETURN_IF_ERROR(CheckSameEncoding(
          table.columns[n_in + i], absl::StrCat("data.outputs[", i, "]"), test,
          absl::StrCat("data.test_outputs[", i, "]")));
      AppendRows(test, true, &test_outputs);
    }
  } else {
    test_inputs = inputs;
    test_outputs = outputs;
  }
  const int trace_col =
      has_trace_column ? table.columns[n_in + n_out].first : -1;
  const std::vector<int64_t> starts(src.trace_starts().begin(),
                                    src.trace_starts().end());

  const int64_t file_rows = table.num_rows();
  // complete[r]: 1-based row r has no missing value (data.drop_missing).
  std::vector<bool> complete;
  std::vector<int64_t> kept;
  if (src.drop_missing()) {
    kept = core::data::CompleteRows(table);
    if (kept.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.drop_missing: each of the ", file_rows,
          " rows has a missing value in a selected column, so no row is "
          "left"));
    }
    complete.assign(file_rows + 1, false);
    for (const int64_t r : kept) complete[r] = true;
  } else {
    kept.resize(file_rows);
    std::iota(kept.begin(), kept.end(), int64_t{1});
  }
  SPARROW_ASSIGN_OR_RETURN(SplitRows ranges, CutSplits(spec, file_rows));

  core::TrainData data;
  if (config.model.kind == core::ModelKind::kMlp) {
    const v1::Split& split = spec.split();
    core::data::RowSplit rows;
    if (IsRandomSplit(split)) {
      SPARROW_ASSIGN_OR_RETURN(
          rows, core::data::RandomSplit(kept, split.validation_fraction(),
                                        split.test_fraction(),
                                        split.shuffle_seed(), "split"));
      const double fraction = split.train_fraction();
      if (fraction > 0 && fraction < 1) {
        rows.train.resize(std::max<size_t>(
            1, static_cast<size_t>(std::llround(
                   fraction * static_cast<double>(rows.train.size())))));
      }
    } else {
      rows.train = KeepComplete(core::data::RowsOf(ranges.train), complete);
      rows.validation =
          KeepComplete(core::data::RowsOf(ranges.validation), complete);
      rows.test = KeepComplete(core::data::RowsOf(ranges.test), complete);
      const struct {
        const char* name;
        bool given;
        const std::vector<int64_t>* rows;
      } parts[] = {
          {"split.train", true, &rows.train},
          {"split.validation", !ranges.validation.empty(), &rows.validation},
          {"split.test", !ranges.test.empty(), &rows.test}};
      for (const auto& part : parts) {
        if (part.given && part.rows->empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat(part.name,
                           ": every row of its ranges has a missing value, so "
                           "data.drop_missing left none"));
        }
      }
    }
    SPARROW_ASSIGN_OR_RETURN(
        data.train_table,
        core::data::MakeTableFromRows(table, inputs, outputs, rows.train));
    if (!rows.validation.empty()) {
      SPARROW_ASSIGN_OR_RETURN(data.validation_table,
                               core::data::MakeTableFromRows(
                                   table, inputs, outputs, rows.validation));
    }
    if (!rows.test.empty()) {
      SPARROW_ASSIGN_OR_RETURN(
          data.test_table, core::data::MakeTableFromRows(
                               table, test_inputs, test_outputs, rows.test));
    }
    if (summary != nullptr) {
      summary->train_rows = data.train_table.num_samples();
      summary->validation_rows = data.validation_table.num_samples();
      summary->test_rows = data.test_table.num_samples();
    }
  } else {
    auto make = [&](const std::vector<core::data::RowRange>& r) {
      return core::data::MakeSequences(table, inputs, outputs, r, trace_col,
                                       starts);
    };
    auto make_test = [&](const std::vector<core::data::RowRange>& r) {
      return core::data::MakeSequences(table, test_inputs, test_outputs, r,
                                       trace_col, starts);
    };
    SPARROW_ASSIGN_OR_RETURN(data.train_seq, make(ranges.train));
    if (!ranges.validation.empty()) {
      SPARROW_ASSIGN_OR_RETURN(data.validation_seq, make(ranges.validation));
    }
    if (!ranges.test.empty()) {
      SPARROW_ASSIGN_OR_RETURN(data.test_seq, make_test(ranges.test));
    }
    if (config.model.kind == core::ModelKind::kNarxMlp) {
      const int lag = config.model.lags.max_lag();
      for (const auto* part :
           {&data.train_seq, &data.validation_seq, &data.test_seq}) {
        for (size_t t = 0; t < part->traces.size(); ++t) {
          if (part->traces[t].length() <= lag) {
            return absl::InvalidArgumentError(absl::StrCat(
                "model.narx_mlp: lag ", lag,
                " is longer than the data: a trace of the ",
                part == &data.train_seq  ? "training"
                : part == &data.test_seq ? "test"
                                         : "validation",
                " split has only ", part->traces[t].length(), " samples"));
          }
        }
      }
    }
    if (summary != nullptr) {
      summary->train_rows = data.train_seq.total_samples();
      summary->validation_rows = data.validation_seq.total_samples();
      summary->test_rows = data.test_seq.total_samples();
    }
  }
  if (summary != nullptr) {
    summary->file_rows = file_rows;
    summary->dropped_rows = file_rows - static_cast<int64_t>(kept.size());
    summary->inputs = static_cast<int>(inputs.size());
    summary->outputs = static_cast<int>(outputs.size());
  }
  return data;
}

absl::Status ValidateDataSpec(const v1::JobSpec& spec,
                              const std::vector<std::string>& header,
                              int64_t rows) {
  SPARROW_RETURN_IF_ERROR(CheckColumnRoles(spec.data()));
  SPARROW_ASSIGN_OR_RETURN(
      std::vector<int> columns,
      core::data::ResolveColumns(header, Selectors(spec.data())));
  std::vector<std::string> selected;
  for (const int c : columns) selected.push_back(header[c]);
  SPARROW_RETURN_IF_ERROR(CheckOneRolePerColumn(selected));
  SPARROW_RETURN_IF_ERROR(CheckDataOptions(spec, header));
  if (rows <= 0) return absl::OkStatus();
  return CutSplits(spec, rows).status();
}

v1::TrainedModel ToProto(const v1::JobSpec& spec,
                         const core::TrainResult& result) {
  const core::Model& m = result.model;
  v1::TrainedModel out;
  *out.mutable_model() = spec.model();
  *out.mutable_loss() = spec.loss();
  out.set_num_inputs(m.input_scaling.size());
  out.set_num_outputs(static_cast<int>(m.output_names.size()));
  *out.mutable_input_scaling() = ToProto(m.input_scaling, m.input_names);
  *out.mutable_output_scaling() = ToProto(m.output_scaling, m.output_names);
  out.mutable_parameters()->Add(m.params.data(),
                                m.params.data() + m.params.size());
  if (m.config.kind == core::ModelKind::kStateSpaceRnn) {
    const core::StateSpaceRnn rnn(m.config.rnn);
    for (const core::ParamBlock& b : rnn.blocks()) {
      v1::ParameterBlock* p = out.add_blocks();
      p->set_name(b.name);
      p->set_offset(b.offset);
      p->set_size(b.size);
    }
  } else {
    v1::ParameterBlock* p = out.add_blocks();
    p->set_name("mlp");
    p->set_size(static_cast<int>(m.params.size()));
  }
  const core::Metrics& k = result.metrics;
  v1::Metrics* pm = out.mutable_metrics();
  pm->set_train_rmse(k.train_rmse);
  pm->set_validation_rmse(k.validation_rmse);
  pm->set_test_rmse(k.test_rmse);
  pm->set_train_bfr(k.train_bfr);
  pm->set_validation_bfr(k.validation_bfr);
  pm->set_test_bfr(k.test_bfr);
  pm->set_train_accuracy(k.train_accuracy);
  pm->set_validation_accuracy(k.validation_accuracy);
  pm->set_test_accuracy(k.test_accuracy);
  pm->set_train_one_step_rmse(k.train_one_step_rmse);
  pm->set_test_one_step_rmse(k.test_one_step_rmse);
  pm->set_sparsity_pct(k.sparsity_pct);
  pm->set_remaining_pct(k.remaining_pct);
  pm->set_model_order(k.model_order);
  for (const core::LayerSparsity& l : k.layers) {
    v1::LayerSparsity* pl = pm->add_layers();
    pl->set_neurons(l.neurons);
    pl->set_inputs(l.inputs);
    pl->set_zeros(l.zeros);
    pl->set_zero_pct(l.zero_pct);
    pl->set_remaining_pct(l.remaining_pct);
  }
  for (const std::string& r : k.removed) pm->add_removed(r);
  for (Eigen::Index i = 0; i < m.mask.size(); ++i)
    out.add_mask(m.mask(i) != 0.0);
  out.mutable_variance()->Add(m.variance.data(),
                              m.variance.data() + m.variance.size());
  out.set_noise_variance(m.noise_variance);
  out.set_epochs(result.summary.iterations);
  out.set_termination(core::TerminationName(result.summary.termination));
  out.set_seconds(result.train_seconds);
  out.set_seed(spec.seed());
  out.set_rho_x0(m.rho_x0);
  return out;
}

absl::StatusOr<core::Model> FromProto(const v1::TrainedModel& p) {
  core::Model m;
  SPARROW_ASSIGN_OR_RETURN(m.loss, ToLoss(p.loss()));
  SPARROW_ASSIGN_OR_RETURN(m.config, ToModelConfig(p.model(), m.loss));
  m.rho_x0 = p.rho_x0();
  const int n_in = p.num_inputs();
  const int n_out = p.num_outputs();
  SPARROW_ASSIGN_OR_RETURN(m.input_scaling,
                           FromProto(p.input_scaling(), n_in, "input_scaling"));
  SPARROW_ASSIGN_OR_RETURN(
      m.output_scaling, FromProto(p.output_scaling(), n_out, "output_scaling"));
  m.input_names.assign(p.input_scaling().names().begin(),
                       p.input_scaling().names().end());
  m.output_names.assign(p.output_scaling().names().begin(),
                        p.output_scaling().names().end());
  m.params = Eigen::Map<const Eigen::VectorXd>(p.parameters().data(),
                                               p.parameters_size());
  int expected = 0;
  switch (m.config.kind) {
    case core::ModelKind::kMlp:
      expected =
          core::Mlp(core::NetworkSpec(m.config, n_in, n_out)).num_params();
      break;
    case core::ModelKind::kNarxMlp:
      expected =
          core::Mlp(core::NetworkSpec(
                        m.config, m.config.lags.dimension(n_in, n_out), n_out))
              .num_params();
      break;
    case core::ModelKind::kStateSpaceRnn: {
      core::StateSpaceRnnSpec& s = m.config.rnn;
      s.nu = n_in;
      s.ny = n_out;
      s.num_traces = 1;
      for (const v1::ParameterBlock& b : p.blocks()) {
        if (b.name() == "x0" && s.nx > 0)
          s.num_traces = std::max(1, b.size() / s.nx);
      }
      expected = core::StateSpaceRnn(s).num_params();
      break;
    }
  }
  if (expected != m.params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stored model has ", m.params.size(),
                     " parameters but its architecture needs ", expected));
  }
  // Prediction finds the CSV columns by these names.
  if (static_cast<int>(m.input_names.size()) != n_in ||
      static_cast<int>(m.output_names.size()) != n_out) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the stored model names ", m.input_names.size(), " inputs and ",
        m.output_names.size(), " outputs but has ", n_in, " and ", n_out));
  }
  if (!m.params.allFinite()) {
    return absl::InvalidArgumentError(
        "the stored model has NaN or Inf parameters");
  }
  if (p.mask_size() != 0) {
    if (p.mask_size() != m.params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the stored model has ", p.mask_size(),
                       " mask entries for ", m.params.size(), " parameters"));
    }
    m.mask.resize(p.mask_size());
    for (int i = 0; i < p.mask_size(); ++i) m.mask(i) = p.mask(i) ? 1.0 : 0.0;
  }
  if (p.variance_size() != 0) {
    if (p.variance_size() != m.params.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the stored model has ", p.variance_size(),
                       " variances for ", m.params.size(), " parameters"));
    }
    m.variance = Eigen::Map<const Eigen::VectorXd>(p.variance().data(),
                                                   p.variance_size());
    if (!m.variance.allFinite() || (m.variance.array() < 0).any()) {
      return absl::InvalidArgumentError(
          "the stored model has negative or non-finite variances");
    }
  }
  if (!(p.noise_variance() >= 0) || !std::isfinite(p.noise_variance())) {
    return absl::InvalidArgumentError(
        "the stored model's noise_variance must be finite and >= 0");
  }
  m.noise_variance = p.noise_variance();
  return m;
}

}  // namespace sparrow::translate
