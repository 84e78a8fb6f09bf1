#include "translate/onnx_export.h"

#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/train/model.h"
#include "core/train/model_registry.h"
#include "core/util/status_macros.h"
#include "nlohmann/json.hpp"
#include "translate/model.h"
#include "translate/onnx_graph.h"
#include "translate/onnx_layered.h"

namespace sparrow::translate {
namespace {

using onnx_export::GraphBuilder;
using onnx_export::kDynamic;

using Export = onnx_export::OnnxModel;

void Describe(onnx::GraphProto* graph, const std::string& name,
              const std::string& text) {
  for (auto* values : {graph->mutable_input(), graph->mutable_output()}) {
    for (onnx::ValueInfoProto& v : *values) {
      if (v.name() == name) v.set_doc_string(text);
    }
  }
}

std::string Columns(const std::vector<std::string>& names) {
  return absl::StrJoin(names, ", ");
}

// Column names as a JSON array (a name may hold commas).
std::string JsonNames(const std::vector<std::string>& names) {
  return nlohmann::json(names).dump();
}

void AddMetadata(onnx::ModelProto* proto, const std::string& key,
                 const std::string& value) {
  onnx::StringStringEntryProto* entry = proto->add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

// {"index": 2, "trials": 6, "label": "tau=0.1 seed=2", "settings":
// [{"field": "regularization.l1.tau", "value": "0.1"}]}, every key present
// (protobuf's JSON would leave out an index of 0).
std::string SweepTrialJson(const v1::SweepTrialOrigin& trial) {
  nlohmann::ordered_json settings = nlohmann::ordered_json::array();
  for (const auto& s : trial.settings()) {
    settings.push_back({{"field", s.field()}, {"value", s.value()}});
  }
  return nlohmann::ordered_json{{"index", trial.index()},
                                {"trials", trial.trials()},
                                {"label", trial.label()},
                                {"settings", settings}}
      .dump();
}

// onnxruntime 1.30 fuses a Mul or Div by a one-element constant next to a
// MatMul into a FusedMatMul whose alpha is a float, which costs a float64
// graph up to 1e-8 relative (measured 2026-11-28; later onnxruntime fuses
// only scales that a float holds exactly). In an mlp the divided inputs meet
// the first MatMul and the scaled outputs the last, so the export folds the
// input's 1 / scale into the first layer's weights and, under a linear output
// activation, the output's scale into the last layer; the means stay nodes.
struct FoldedMlp {
  Eigen::VectorXd params;
  bool output_folded = false;
};

FoldedMlp FoldScalings(const core::Model& m, const core::MlpSpec& spec) {
  FoldedMlp f{m.params, spec.output_activation == core::Activation::kLinear};
  const size_t layers = spec.hidden.size() + 1;
  int64_t offset = 0;
  int in = spec.inputs;
  for (size_t l = 0; l < layers; ++l) {
    const bool last = l + 1 == layers;
    const int out = last ? spec.outputs : spec.hidden[l];
    // A (out x in, column-major), then b.
    double* a = f.params.data() + offset;
    for (int c = 0; c < in; ++c) {
      for (int r = 0; r < out; ++r) {
        if (l == 0) a[c * out + r] /= m.input_scaling.scale(c);
        if (last && f.output_folded)
          a[c * out + r] *= m.output_scaling.scale(r);
      }
    }
    double* b = a + int64_t{in} * out;
    for (int r = 0; r < out && spec.bias && last && f.output_folded; ++r) {
      b[r] *= m.output_scaling.scale(r);
    }
    offset += int64_t{in} * out + (spec.bias ? out : 0);
    in = out;
  }
  return f;
}

// The mlp on `input` (data units); its outputs in data units.
std::string MlpRows(const core::Model& m, GraphBuilder* g) {
  const int n_in = m.input_scaling.size();
  const int n_out = m.output_scaling.size();
  const core::MlpSpec spec = core::NetworkSpec(m.config, n_in, n_out);
  const FoldedMlp f = FoldScalings(m, spec);
  const std::string centered = g->Apply(
      "Sub",
      {"input", g->Doubles("input_mean", {n_in}, m.input_scaling.mean.data())},
      "input_centered");
  const std::string z = g->Dense(centered, spec, f.params.data(), "mlp");
  if (!f.output_folded) return g->Unscale(z, m.output_scaling, "output");
  return g->Apply(
      "Add",
      {z, g->Doubles("output_mean", {n_out}, m.output_scaling.mean.data())},
      "output_units");
}

// A model on table rows: mlp, cnn, rnn, lstm. A classifier trained with
// softmax cross-entropy also gets its class probabilities.
absl::Status BuildRows(const core::Model& m, Export* e) {
  GraphBuilder g = e->Main();
  const int n_in = m.input_scaling.size();
  const int n_out = m.output_scaling.size();
  g.Input("input", {kDynamic, n_in});
  std::string out;
  if (m.config.is<core::MlpKind>()) {
    out = MlpRows(m, &g);
  } else {
    const std::string x = g.Scale("input", m.input_scaling, "input");
    SPARROW_ASSIGN_OR_RETURN(const std::string z,
                             onnx_export::BuildLayered(m, &g, x));
    out = g.Unscale(z, m.output_scaling, "output");
  }
  g.Node("Identity", {out}, "output");
  g.Output("output", {kDynamic, n_out});
  onnx::GraphProto* graph = e->proto.mutable_graph();
  Describe(graph, "input",
           absl::StrCat("one row per sample: ", Columns(m.input_names)));
  Describe(graph, "output",
           absl::StrCat("one row per sample: ", Columns(m.output_names)));
  if (m.loss.kind == core::LossKind::kSoftmaxCrossEntropy) {
    GraphBuilder::SetInt(g.Node("Softmax", {"output"}, "probabilities"), "axis",
                         1);
    g.Output("probabilities", {kDynamic, n_out});
    Describe(graph, "probabilities",
             "softmax of the outputs: the probability of each class");
  }
  return absl::OkStatus();
}

// Rows L - lag .. T - 1 - lag of `v` [T, channels]: the lag's block of the
// regressors of samples L..T-1.
std::string Lagged(GraphBuilder* g, const std::string& v, int max_lag,
                   int lag) {
  const int64_t end =
      lag == 0 ? std::numeric_limits<int64_t>::max() : -int64_t{lag};
  return g->Apply("Slice",
                  {v, g->Int64s("start", {max_lag - lag}),
                   g->Int64s("end", {end}), g->Int64s("axis", {0})},
                  absl::StrCat(v, "_lag", lag));
}

// The network on `in`, plus the linear term M in (M stored column-major at
// `linear`, M^T read in order) when the model is linear-plus-neural: y or x+
// of the state-space model, the NARX model's prediction.
std::string NetworkPlusLinear(GraphBuilder* g, const std::string& in,
                              const core::Mlp& net, const double* theta,
                              const double* linear, absl::string_view hint) {
  const std::string out = g->Dense(in, net.spec(), theta, hint);
  if (linear == nullptr) return out;
  const std::string term =
      g->Apply("MatMul",
               {in, g->Doubles(absl::StrCat(hint, "_linear_t"),
                               {net.inputs(), net.outputs()}, linear)},
               absl::StrCat(hint, "_linear"));
  return g->Apply("Add", {out, term}, absl::StrCat(hint, "_plus_linear"));
}

void BuildNarx(const core::Model& m, Export* e) {
  GraphBuilder g = e->Main();
  const core::data::NarxLags& lags = m.config.as<core::NarxMlpKind>().lags;
  const int nu = m.input_scaling.size();
  const int ny = m.output_scaling.size();
  const int max_lag = lags.max_lag();
  g.Input("u", {kDynamic, nu}, {"T"});
  g.Input("y", {kDynamic, ny}, {"T"});
  const std::string u = g.Scale("u", m.input_scaling, "u");
  const std::string y = g.Scale("y", m.output_scaling, "y");
  // z(t) = [u(t), u(t-1) .. u(t-na), y(t-1) .. y(t-nb)] (core/data/narx.h).
  std::vector<std::string> blocks;
  for (int k = lags.feedthrough ? 0 : 1; k <= lags.input_lags; ++k) {
    blocks.push_back(Lagged(&g, u, max_lag, k));
  }
  for (int k = 1; k <= lags.output_lags; ++k) {
    blocks.push_back(Lagged(&g, y, max_lag, k));
  }
  const std::string z = g.Name("regressors");
  GraphBuilder::SetInt(g.Node("Concat", blocks, z), "axis", 1);
  const core::NarxMlp narx = core::NarxModel(m);
  const core::Mlp::Layer* linear = narx.network().linear();
  const std::string out = NetworkPlusLinear(
      &g, z, narx.network(), m.params.data(),
      linear != nullptr ? m.params.data() + linear->weight_offset : nullptr,
      "narx");
  g.Node("Identity", {g.Unscale(out, m.output_scaling, "y_pred")}, "y_pred");
  g.Output("y_pred", {kDynamic, ny}, {"T_minus_max_lag"});
  onnx::GraphProto* graph = e->proto.mutable_graph();
  Describe(
      graph, "u",
      absl::StrCat("inputs, one row per sample: ", Columns(m.input_names)));
  Describe(graph, "y",
           absl::StrCat("measured outputs, one row per sample: ",
                        Columns(m.output_names)));
  Describe(graph, "y_pred",
           absl::StrCat("one-step-ahead predictions of samples ", max_lag,
                        " .. T-1"));
  AddMetadata(&e->proto, "sparrow.first_predicted_sample",
              absl::StrCat(max_lag));
}

// The Scan body: (x [nx], u [nu]) -> (x+ [nx], y [ny]).
void BuildStep(const core::StateSpaceRnn& rnn, const double* theta, Export* e,
               onnx::GraphProto* body) {
  GraphBuilder g(body, e->proto.mutable_graph(), &e->counter);
  body->set_name("step");
  const core::StateSpaceRnnSpec& spec = rnn.spec();
  g.Input("x", {spec.nx});
  g.Input("u_t", {spec.nu});
  const std::string xu = g.Name("xu");
  GraphBuilder::SetInt(g.Node("Concat", {"x", "u_t"}, xu), "axis", 0);
  const bool linear = spec.linear;
  const std::string y = NetworkPlusLinear(
      &g, spec.feedthrough ? xu : "x", rnn.fy(), theta + rnn.fy_offset(),
      linear ? theta + rnn.cd_offset() : nullptr, "fy");
  const std::string x_next =
      NetworkPlusLinear(&g, xu, rnn.fx(), theta + rnn.fx_offset(),
                        linear ? theta + rnn.ab_offset() : nullptr, "fx");
  g.Node("Identity", {x_next}, "x_next");
  g.Node("Identity", {y}, "y_t");
  g.Output("x_next", {spec.nx});
  g.Output("y_t", {spec.ny});
}

void BuildStateSpace(const core::Model& m, Export* e) {
  const core::StateSpaceRnn rnn(m.config.as<core::StateSpaceRnnKind>().rnn);
  const core::StateSpaceRnnSpec& spec = rnn.spec();
  GraphBuilder g = e->Main();
  g.Input("u", {kDynamic, spec.nu}, {"T"});
  g.Input("x0", {spec.nx});
  const std::string u = g.Scale("u", m.input_scaling, "u");
  const std::string y_scaled = g.Name("y_scaled");
  onnx::NodeProto* scan = g.Node("Scan", {"x0", u}, "x_final");
  scan->add_output(y_scaled);
  GraphBuilder::SetInt(scan, "num_scan_inputs", 1);
  onnx::AttributeProto* body = scan->add_attribute();
  body->set_name("body");
  body->set_type(onnx::AttributeProto::GRAPH);
  BuildStep(rnn, m.params.data(), e, body->mutable_g());
  g.Node("Identity", {g.Unscale(y_scaled, m.output_scaling, "y")}, "y");
  g.Output("y", {kDynamic, spec.ny}, {"T"});
  g.Output("x_final", {spec.nx});
  onnx::GraphProto* graph = e->proto.mutable_graph();
  Describe(
      graph, "u",
      absl::StrCat("inputs, one row per sample: ", Columns(m.input_names)));
  Describe(graph, "x0",
           "initial state in the model's normalized state units (zero: the "
           "state the scaled model rests in; sparrow predict prints the x0 "
           "it estimated)");
  Describe(graph, "y",
           absl::StrCat("simulated outputs, one row per sample: ",
                        Columns(m.output_names)));
  Describe(graph, "x_final", "the state after the last input");
}

absl::Status Build(const core::Model& m, Export* e) {
  const char* kind = core::FamilyOf(m.config.kind).name();
  if (m.config.is<core::NarxMlpKind>()) {
    BuildNarx(m, e);
  } else if (m.config.is<core::StateSpaceRnnKind>()) {
    BuildStateSpace(m, e);
  } else {
    SPARROW_RETURN_IF_ERROR(BuildRows(m, e));
  }
  onnx::ModelProto& p = e->proto;
  p.set_ir_version(onnx::IR_VERSION);
  p.set_producer_name("sparrow");
  p.set_model_version(1);
  p.set_doc_string(absl::StrCat(
      "A Sparrow ", kind,
      " model: float64 (Conv, RNN and LSTM layers float32), inputs and "
      "outputs in data units (docs/onnx.md)"));
  onnx::OperatorSetIdProto* opset = p.add_opset_import();
  opset->set_domain("");
  opset->set_version(onnx_export::kOpset);
  p.mutable_graph()->set_name(absl::StrCat("sparrow_", kind));
  AddMetadata(&p, "sparrow.model", kind);
  AddMetadata(&p, "sparrow.input_columns", JsonNames(m.input_names));
  AddMetadata(&p, "sparrow.output_columns", JsonNames(m.output_names));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<onnx::ModelProto> ToOnnx(const v1::TrainedModel& model) {
  SPARROW_ASSIGN_OR_RETURN(const core::Model m, FromProto(model));
  Export e;
  try {
    SPARROW_RETURN_IF_ERROR(Build(m, &e));
    if (model.has_sweep_trial()) {
      AddMetadata(&e.proto, "sparrow.sweep_trial",
                  SweepTrialJson(model.sweep_trial()));
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory building the ONNX model");
  }
  SPARROW_RETURN_IF_ERROR(onnx_export::CheckModel(e.proto));
  return std::move(e.proto);
}

absl::StatusOr<std::string> ExportOnnx(const v1::TrainedModel& model) {
  SPARROW_ASSIGN_OR_RETURN(const onnx::ModelProto proto, ToOnnx(model));
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "the ONNX model would be %d bytes; protobuf serializes at most 2 GiB",
        proto.ByteSizeLong()));
  }
  return bytes;
}

}  // namespace sparrow::translate
