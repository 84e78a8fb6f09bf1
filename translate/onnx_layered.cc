#include "translate/onnx_layered.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/models/layers/conv2d.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/lstm.h"
#include "core/models/layers/max_pool2d.h"
#include "core/models/layers/rnn.h"
#include "core/models/layers/step_dense.h"
#include "core/train/models/layered.h"
#include "core/util/status_macros.h"

namespace sparrow::translate::onnx_export {
namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;
constexpr int kDouble = onnx::TensorProto::DOUBLE;

// How a value between layers is laid out: rows [N, size], feature maps
// [N, C, H, W], or sequences in ONNX's recurrent layout [T, N, F].
enum class Layout { kFlat, kMaps, kSteps };

struct Value {
  std::string name;
  Layout layout = Layout::kFlat;
};

std::string Reshape(GraphBuilder* g, const std::string& v,
                    const std::vector<int64_t>& shape, absl::string_view hint) {
  return g->Apply("Reshape", {v, g->Int64s("shape", shape)}, hint);
}

std::string Transpose(GraphBuilder* g, const std::string& v,
                      const std::vector<int64_t>& perm,
                      absl::string_view hint) {
  const std::string out = g->Name(hint);
  GraphBuilder::SetInts(g->Node("Transpose", {v}, out), "perm", perm);
  return out;
}

std::string Squeeze(GraphBuilder* g, const std::string& v, int64_t axis) {
  return g->Apply("Squeeze", {v, g->Int64s("axes", {axis})}, "squeezed");
}

// v in layout `want`, for a layer whose input shape is `in` (a table row is
// channel-major maps, or step-major sequences: Sparrow's layouts).
Value ToLayout(GraphBuilder* g, const Value& v, Layout want,
               const core::Shape& in) {
  if (v.layout == want) return v;
  if (want == Layout::kMaps) {
    return {Reshape(g, v.name, {-1, in.channels, in.height, in.width}, "maps"),
            Layout::kMaps};
  }
  if (want == Layout::kSteps) {
    const std::string rows =
        Reshape(g, v.name, {-1, in.height, in.width}, "sequences");
    return {Transpose(g, rows, {1, 0, 2}, "steps"), Layout::kSteps};
  }
  if (v.layout == Layout::kMaps) {
    const std::string out = g->Name("flat");
    GraphBuilder::SetInt(g->Node("Flatten", {v.name}, out), "axis", 1);
    return {out, Layout::kFlat};
  }
  const std::string rows = Transpose(g, v.name, {1, 0, 2}, "sample_major");
  return {Reshape(g, rows, {0, -1}, "flat"), Layout::kFlat};
}

Value Dense(const core::DenseLayer& d, const double* theta, GraphBuilder* g,
            const Value& in) {
  const Value v = ToLayout(g, in, Layout::kFlat, d.input_shape());
  core::MlpSpec spec{
      d.in(), {}, d.out(), core::Activation::kLinear, d.activation()};
  spec.bias = d.bias();
  return {g->Dense(v.name, spec, theta, "dense"), Layout::kFlat};
}

// K~ (filters x C k k, column-major) is PyTorch's and ONNX's weight
// (filters, C, k, k) transposed in memory.
Value Conv(const core::Conv2dLayer& c, const double* theta, GraphBuilder* g,
           const Value& in) {
  const Value v = ToLayout(g, in, Layout::kMaps, c.input_shape());
  const core::ConvGeometry& geo = c.geometry();
  const int filters = geo.filters;
  const int field = geo.field();
  std::vector<float> w(static_cast<size_t>(filters) * field);
  std::vector<float> b(filters);
  for (int f = 0; f < filters; ++f) {
    for (int col = 0; col < field; ++col) {
      w[static_cast<size_t>(f) * field + col] =
          static_cast<float>(theta[f + static_cast<int64_t>(col) * filters]);
    }
    b[f] = static_cast<float>(theta[static_cast<int64_t>(filters) * field + f]);
  }
  const int k = geo.kernel;
  const int p = geo.padding;
  const std::string out = g->Name("conv");
  onnx::NodeProto* node =
      g->Node("Conv",
              {g->Cast(v.name, kFloat),
               g->Floats("conv_weight", {filters, geo.in.channels, k, k}, w),
               g->Floats("conv_bias", {filters}, b)},
              out);
  GraphBuilder::SetInts(node, "kernel_shape", {k, k});
  GraphBuilder::SetInts(node, "strides", {geo.stride, geo.stride});
  GraphBuilder::SetInts(node, "pads", {p, p, p, p});
  return {g->Activate(g->Cast(out, kDouble), c.activation()), Layout::kMaps};
}

Value MaxPool(const core::MaxPool2dLayer& m, GraphBuilder* g, const Value& in) {
  const Value v = ToLayout(g, in, Layout::kMaps, m.input_shape());
  const std::string out = g->Name("max_pool");
  onnx::NodeProto* node = g->Node("MaxPool", {v.name}, out);
  GraphBuilder::SetInts(node, "kernel_shape", {m.size(), m.size()});
  GraphBuilder::SetInts(node, "strides", {m.stride(), m.stride()});
  return {out, Layout::kMaps};
}

// The Elman layer's activation as ONNX's RNN names it.
void SetRnnActivation(core::Activation f, onnx::NodeProto* node) {
  onnx::AttributeProto* names = node->add_attribute();
  names->set_name("activations");
  names->set_type(onnx::AttributeProto::STRINGS);
  onnx::AttributeProto* alpha = node->add_attribute();
  alpha->set_name("activation_alpha");
  alpha->set_type(onnx::AttributeProto::FLOATS);
  switch (f) {
    case core::Activation::kSigmoid:
      names->add_strings("Sigmoid");
      break;
    case core::Activation::kRelu:
      names->add_strings("Relu");
      break;
    case core::Activation::kLeakyRelu:
      names->add_strings("LeakyRelu");
      alpha->add_floats(static_cast<float>(core::kLeakyReluSlope));
      break;
    case core::Activation::kLinear: {
      names->add_strings("Affine");  // alpha v + beta
      alpha->add_floats(1.0f);
      onnx::AttributeProto* beta = node->add_attribute();
      beta->set_name("activation_beta");
      beta->set_type(onnx::AttributeProto::FLOATS);
      beta->add_floats(0.0f);
      break;
    }
    case core::Activation::kTanh:
      names->add_strings("Tanh");
      break;
  }
  if (alpha->floats_size() == 0) node->mutable_attribute()->RemoveLast();
}

// ONNX's recurrent weights: W [1, R, F], R [1, R, H] row-major and
// B [1, 2R] = [b; v], the LSTM's gate blocks in ONNX's order i, o, f, c
// (Sparrow's is I, G, F, O).
struct RecurrentWeights {
  std::vector<float> w, r, b;
};

RecurrentWeights Weights(const core::RecurrentLayer& layer, bool lstm,
                         const double* theta) {
  const int h = layer.hidden();
  const int f = layer.features();
  const int rows = layer.rows();
  const std::vector<int> order =
      lstm ? std::vector<int>{0, 3, 2, 1} : std::vector<int>{0};
  RecurrentWeights out;
  out.w.resize(static_cast<size_t>(rows) * f);
  out.r.resize(static_cast<size_t>(rows) * h);
  out.b.resize(2 * static_cast<size_t>(rows));
  for (size_t gate = 0; gate < order.size(); ++gate) {
    for (int j = 0; j < h; ++j) {
      const int64_t from = int64_t{order[gate]} * h + j;
      const int64_t to = static_cast<int64_t>(gate) * h + j;
      for (int col = 0; col < f; ++col) {
        out.w[to * f + col] = static_cast<float>(
            theta[layer.w_offset() + from + int64_t{col} * rows]);
      }
      for (int col = 0; col < h; ++col) {
        out.r[to * h + col] = static_cast<float>(
            theta[layer.v_weight_offset() + from + int64_t{col} * rows]);
      }
      out.b[to] = static_cast<float>(theta[layer.b_offset() + from]);
      out.b[rows + to] =
          static_cast<float>(theta[layer.v_bias_offset() + from]);
    }
  }
  return out;
}

Value Recurrent(const core::RecurrentLayer& layer, const double* theta,
                GraphBuilder* g, const Value& in) {
  const Value v = ToLayout(g, in, Layout::kSteps, layer.input_shape());
  const auto* rnn = dynamic_cast<const core::RnnLayer*>(&layer);
  const bool lstm = rnn == nullptr;
  const RecurrentWeights w = Weights(layer, lstm, theta);
  const int64_t rows = layer.rows();
  const std::string op = lstm ? "lstm" : "rnn";
  const std::string y = g->Name(op + "_y");
  const std::string y_last = g->Name(op + "_y_h");
  onnx::NodeProto* node =
      g->Node(lstm ? "LSTM" : "RNN",
              {g->Cast(v.name, kFloat),
               g->Floats(op + "_w", {1, rows, layer.features()}, w.w),
               g->Floats(op + "_r", {1, rows, layer.hidden()}, w.r),
               g->Floats(op + "_b", {1, 2 * rows}, w.b)},
              y);
  node->add_output(y_last);
  GraphBuilder::SetInt(node, "hidden_size", layer.hidden());
  if (rnn != nullptr) SetRnnActivation(rnn->activation(), node);
  // Y is [T, 1, N, H]; Y_h, the last step's, [1, N, H].
  if (layer.sequence_output()) {
    return {g->Cast(Squeeze(g, y, 1), kDouble), Layout::kSteps};
  }
  return {g->Cast(Squeeze(g, y_last, 0), kDouble), Layout::kFlat};
}

// The same dense layer at every step; the outputs step-major per sample.
Value StepDense(const core::StepDenseLayer& s, const double* theta,
                GraphBuilder* g, const Value& in) {
  const Value v = ToLayout(g, in, Layout::kSteps, s.input_shape());
  const std::string by_sample = Transpose(g, v.name, {1, 0, 2}, "by_sample");
  const core::MlpSpec spec{s.in(),
                           {},
                           s.out(),
                           core::Activation::kLinear,
                           core::Activation::kLinear};
  const std::string z = g->Dense(by_sample, spec, theta, "step_dense");
  return {Reshape(g, z, {0, -1}, "step_outputs"), Layout::kFlat};
}

absl::StatusOr<Value> AddLayer(const core::Layer& layer, const double* theta,
                               GraphBuilder* g, const Value& v) {
  if (const auto* d = dynamic_cast<const core::DenseLayer*>(&layer)) {
    return Dense(*d, theta, g, v);
  }
  if (const auto* c = dynamic_cast<const core::Conv2dLayer*>(&layer)) {
    return Conv(*c, theta, g, v);
  }
  if (const auto* p = dynamic_cast<const core::MaxPool2dLayer*>(&layer)) {
    return MaxPool(*p, g, v);
  }
  if (dynamic_cast<const core::FlattenLayer*>(&layer) != nullptr) {
    return ToLayout(g, v, Layout::kFlat, layer.input_shape());
  }
  if (const auto* r = dynamic_cast<const core::RecurrentLayer*>(&layer)) {
    return Recurrent(*r, theta, g, v);
  }
  if (const auto* s = dynamic_cast<const core::StepDenseLayer*>(&layer)) {
    return StepDense(*s, theta, g, v);
  }
  return absl::UnimplementedError(
      "ONNX export: the model has a layer without an ONNX form");
}

}  // namespace

absl::StatusOr<std::string> BuildLayered(const core::Model& m, GraphBuilder* g,
                                         const std::string& input) {
  const auto* family =
      dynamic_cast<const core::LayeredFamily*>(&core::FamilyOf(m.config.kind));
  if (family == nullptr) {
    return absl::InvalidArgumentError("not a cnn, rnn or lstm model");
  }
  SPARROW_ASSIGN_OR_RETURN(
      const core::Network net,
      family->Build(m.config, m.input_scaling.size(), m.output_scaling.size()));
  Value v{input, Layout::kFlat};
  for (int i = 0; i < net.num_layers(); ++i) {
    SPARROW_ASSIGN_OR_RETURN(
        v, AddLayer(net.layer(i), m.params.data() + net.block(i).offset, g, v));
  }
  return ToLayout(g, v, Layout::kFlat, net.output_shape()).name;
}

}  // namespace sparrow::translate::onnx_export
