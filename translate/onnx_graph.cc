#include "translate/onnx_graph.h"

#include <exception>
#include <new>

#include "absl/strings/str_cat.h"
#include "onnx/checker.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

namespace sparrow::translate::onnx_export {
namespace {

void SetType(onnx::ValueInfoProto* value, const std::vector<int64_t>& dims,
             const std::vector<std::string>& dim_names) {
  onnx::TypeProto_Tensor* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::DOUBLE);
  onnx::TensorShapeProto* shape = tensor->mutable_shape();
  size_t named = 0;
  for (int64_t d : dims) {
    onnx::TensorShapeProto_Dimension* dim = shape->add_dim();
    if (d == kDynamic) {
      dim->set_dim_param(named < dim_names.size() ? dim_names[named++] : "N");
    } else {
      dim->set_dim_value(d);
    }
  }
}

}  // namespace

std::string GraphBuilder::Name(absl::string_view hint) {
  return absl::StrCat(hint, "_", (*counter_)++);
}

std::string GraphBuilder::Doubles(absl::string_view hint,
                                  const std::vector<int64_t>& dims,
                                  const double* data) {
  onnx::TensorProto* t = constants_->add_initializer();
  t->set_name(Name(hint));
  t->set_data_type(onnx::TensorProto::DOUBLE);
  int64_t size = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    size *= d;
  }
  t->mutable_double_data()->Add(data, data + size);
  return t->name();
}

std::string GraphBuilder::Floats(absl::string_view hint,
                                 const std::vector<int64_t>& dims,
                                 const std::vector<float>& data) {
  onnx::TensorProto* t = constants_->add_initializer();
  t->set_name(Name(hint));
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->mutable_float_data()->Add(data.begin(), data.end());
  return t->name();
}

std::string GraphBuilder::Int64s(absl::string_view hint,
                                 const std::vector<int64_t>& values) {
  onnx::TensorProto* t = constants_->add_initializer();
  t->set_name(Name(hint));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->mutable_int64_data()->Add(values.begin(), values.end());
  return t->name();
}

onnx::NodeProto* GraphBuilder::Node(absl::string_view op,
                                    const std::vector<std::string>& inputs,
                                    const std::string& output) {
  onnx::NodeProto* node = nodes_->add_node();
  node->set_op_type(std::string(op));
  node->set_name(absl::StrCat(op, "_", (*counter_)++));
  for (const std::string& in : inputs) node->add_input(in);
  node->add_output(output);
  return node;
}

std::string GraphBuilder::Apply(absl::string_view op,
                                const std::vector<std::string>& inputs,
                                absl::string_view hint) {
  const std::string out = Name(hint);
  Node(op, inputs, out);
  return out;
}

void GraphBuilder::SetInt(onnx::NodeProto* node, const std::string& name,
                          int64_t value) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void GraphBuilder::SetInts(onnx::NodeProto* node, const std::string& name,
                           const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  a->mutable_ints()->Add(values.begin(), values.end());
}

std::string GraphBuilder::Cast(const std::string& v, int type) {
  const std::string out =
      Name(type == onnx::TensorProto::FLOAT ? "float" : "double");
  SetInt(Node("Cast", {v}, out), "to", type);
  return out;
}

std::string GraphBuilder::Activate(const std::string& v, core::Activation f) {
  switch (f) {
    case core::Activation::kLinear:
      return v;
    case core::Activation::kTanh:
      return Apply("Tanh", {v}, "tanh");
    case core::Activation::kSigmoid: {
      // 0.5 + 0.5 tanh(v / 2), as core computes it (activation.h), so the
      // graph rounds as Sparrow does.
      const double half = 0.5;
      const std::string h = Doubles("half", {}, &half);
      const std::string t =
          Apply("Tanh", {Apply("Mul", {v, h}, "sigmoid_half")}, "sigmoid_tanh");
      return Apply("Add", {h, Apply("Mul", {t, h}, "sigmoid_scaled")},
                   "sigmoid");
    }
    case core::Activation::kRelu:
      return Apply("Relu", {v}, "relu");
    case core::Activation::kLeakyRelu: {
      // ONNX's LeakyRelu has no float64 kernel in onnxruntime; max(v, 0.1 v)
      // is the same function for a slope below 1.
      const double slope = core::kLeakyReluSlope;
      const std::string scaled =
          Apply("Mul", {v, Doubles("slope", {}, &slope)}, "leaky");
      return Apply("Max", {v, scaled}, "leaky_relu");
    }
  }
  return v;
}

std::string GraphBuilder::Dense(const std::string& x, const core::MlpSpec& spec,
                                const double* theta, absl::string_view hint) {
  std::string z = x;
  int in = spec.inputs;
  const size_t layers = spec.hidden.size() + 1;
  for (size_t l = 0; l < layers; ++l) {
    const bool last = l + 1 == layers;
    const int out = last ? spec.outputs : spec.hidden[l];
    const std::string layer = absl::StrCat(hint, "_layer", l + 1);
    // A (out x in, column-major) read in order is A^T (in x out, row-major).
    z = Apply("MatMul", {z, Doubles(layer + "_weight_t", {in, out}, theta)},
              layer + "_matmul");
    theta += static_cast<int64_t>(in) * out;
    if (spec.bias) {
      z = Apply("Add", {z, Doubles(layer + "_bias", {out}, theta)},
                layer + "_add");
      theta += out;
    }
    z = Activate(z, last ? spec.output_activation : spec.hidden_activation);
    in = out;
  }
  return z;
}

std::string GraphBuilder::Scale(const std::string& v,
                                const core::data::Normalizer& n,
                                absl::string_view hint) {
  const int64_t c = n.size();
  const std::string centered = Apply(
      "Sub", {v, Doubles(absl::StrCat(hint, "_mean"), {c}, n.mean.data())},
      absl::StrCat(hint, "_centered"));
  return Apply(
      "Div",
      {centered, Doubles(absl::StrCat(hint, "_scale"), {c}, n.scale.data())},
      absl::StrCat(hint, "_scaled"));
}

std::string GraphBuilder::Unscale(const std::string& z,
                                  const core::data::Normalizer& n,
                                  absl::string_view hint) {
  const int64_t c = n.size();
  const std::string stretched = Apply(
      "Mul", {z, Doubles(absl::StrCat(hint, "_scale"), {c}, n.scale.data())},
      absl::StrCat(hint, "_stretched"));
  return Apply(
      "Add",
      {stretched, Doubles(absl::StrCat(hint, "_mean"), {c}, n.mean.data())},
      absl::StrCat(hint, "_units"));
}

void GraphBuilder::Input(const std::string& name,
                         const std::vector<int64_t>& dims,
                         const std::vector<std::string>& dim_names) {
  onnx::ValueInfoProto* value = nodes_->add_input();
  value->set_name(name);
  SetType(value, dims, dim_names);
}

void GraphBuilder::Output(const std::string& name,
                          const std::vector<int64_t>& dims,
                          const std::vector<std::string>& dim_names) {
  onnx::ValueInfoProto* value = nodes_->add_output();
  value->set_name(name);
  SetType(value, dims, dim_names);
}

namespace {

// The model with its float weights' values dropped (shapes and types kept),
// for shape inference, which reads only the int64 constants' values (Reshape
// shapes, Slice bounds): a copy of the structure, not of the weights.
onnx::ModelProto Structure(const onnx::ModelProto& model) {
  onnx::ModelProto out = model;
  for (onnx::TensorProto& t : *out.mutable_graph()->mutable_initializer()) {
    t.clear_double_data();
    t.clear_float_data();
  }
  return out;
}

}  // namespace

absl::Status CheckModel(const onnx::ModelProto& model) {
  // The checker reports by exception (onnx::checker::ValidationError, and
  // shape inference's onnx::InferenceError).
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto structure = Structure(model);
    onnx::shape_inference::InferShapes(
        structure, onnx::OpSchemaRegistry::Instance(),
        onnx::ShapeInferenceOptions(/*check_type_val=*/true,
                                    /*strict_mode_val=*/1));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory checking the ONNX model");
  } catch (const std::exception& e) {
    // A graph the exporter built wrong: a bug, not the caller's error.
    return absl::InternalError(absl::StrCat(
        "the ONNX checker refused the exported model (a bug in Sparrow's "
        "exporter; please report it): ",
        e.what()));
  }
  return absl::OkStatus();
}

}  // namespace sparrow::translate::onnx_export
