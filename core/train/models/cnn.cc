// The convolutional network on images (CnnKind).
#include "core/train/models/cnn.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "core/models/layers/conv2d.h"
#include "core/models/layers/dense.h"
#include "core/models/layers/max_pool2d.h"
#include "core/models/mlp.h"
#include "core/train/models/layered.h"
#include "core/util/status_macros.h"

namespace sparrow::core {
namespace {

using Layers = std::vector<std::shared_ptr<const Layer>>;
using Type = CnnLayerConfig::Type;

absl::Status Refuse(const std::string& field, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

std::string ShapeText(Shape s) {
  return absl::StrCat(s.channels, " x ", s.height, " x ", s.width);
}

absl::Status AddConv(const CnnLayerConfig& l, const std::string& field,
                     const ModelConfig& config, Layers* layers, Shape* s) {
  const int stride = l.stride == 0 ? 1 : l.stride;
  if (l.units < 1 || l.units > kMaxLayerWidth || l.kernel < 1 ||
      l.kernel > kMaxKernel || stride < 1 || stride > kMaxKernel ||
      l.padding < 0 || l.padding >= l.kernel) {
    return Refuse(field,
                  absl::StrCat("filters (", l.units, ") must be in 1..",
                               kMaxLayerWidth, ", kernel (", l.kernel,
                               ") and stride (", stride, ") in 1..", kMaxKernel,
                               ", padding (", l.padding, ") in 0..kernel - 1"));
  }
  if (l.kernel > s->height + 2 * l.padding ||
      l.kernel > s->width + 2 * l.padding) {
    return Refuse(field,
                  absl::StrCat("the ", l.kernel, "x", l.kernel,
                               " kernel is larger than the padded "
                               "input (",
                               ShapeText(*s), ", padding ", l.padding, ")"));
  }
  const ConvGeometry g{*s, l.units, l.kernel, stride, l.padding};
  const int64_t positions = int64_t{g.out_height()} * g.out_width();
  const int64_t field_size = int64_t{s->channels} * l.kernel * l.kernel;
  SPARROW_RETURN_IF_ERROR(
      CheckLayerValues(positions * l.units, field, "its output values"));
  SPARROW_RETURN_IF_ERROR(CheckLayerValues(positions * field_size, field,
                                           "its im2col matrix's values"));
  SPARROW_RETURN_IF_ERROR(
      CheckLayerValues((field_size + 1) * l.units, field, "its parameters"));
  layers->push_back(std::make_shared<Conv2dLayer>(g, l.activation, config.init,
                                                  config.precision));
  *s = g.out();
  return absl::OkStatus();
}

absl::Status AddPool(const CnnLayerConfig& l, const std::string& field,
                     Layers* layers, Shape* s) {
  const int size = l.size == 0 ? 2 : l.size;
  const int stride = l.stride == 0 ? size : l.stride;
  if (size < 1 || stride < 1 || size > s->height || size > s->width) {
    return Refuse(
        field, absl::StrCat("a ", size, "x", size, " window (stride ", stride,
                            ") does not fit the ", ShapeText(*s), " input"));
  }
  auto pool = std::make_shared<MaxPool2dLayer>(*s, size, stride);
  *s = pool->output_shape();
  layers->push_back(std::move(pool));
  return absl::OkStatus();
}

absl::Status AddLayer(const CnnLayerConfig& l, const std::string& field,
                      const ModelConfig& config, Layers* layers, Shape* s,
                      bool* flat) {
  if (l.type != Type::kDense && *flat) {
    return Refuse(field,
                  "comes after a flatten; convolutions, pools and "
                  "flattens work on feature maps");
  }
  switch (l.type) {
    case Type::kConv:
      return AddConv(l, field, config, layers, s);
    case Type::kMaxPool:
      return AddPool(l, field, layers, s);
    case Type::kFlatten:
      if (l.size != 0 && l.size != s->size()) {
        return Refuse(field, absl::StrCat("flatten size ", l.size,
                                          " does not match the flattened ",
                                          ShapeText(*s), " = ", s->size()));
      }
      layers->push_back(std::make_shared<FlattenLayer>(*s));
      *s = Shape::Flat(s->size());
      *flat = true;
      return absl::OkStatus();
    case Type::kDense:
      if (!*flat)
        return Refuse(field, "a dense layer needs a flatten before it");
      if (l.units < 1 || l.units > kMaxLayerWidth) {
        return Refuse(field,
                      absl::StrCat("units must be in 1..", kMaxLayerWidth));
      }
      SPARROW_RETURN_IF_ERROR(CheckLayerValues(
          (int64_t{s->size()} + 1) * l.units, field, "its parameters"));
      layers->push_back(
          std::make_shared<DenseLayer>(s->size(), l.units, l.activation, true,
                                       config.init, config.precision));
      *s = Shape::Flat(l.units);
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

class CnnFamily : public LayeredFamily {
 public:
  const char* name() const override { return CnnKind::kName; }

  void Resolve(int n_in, const data::TableData* images,
               ModelConfig* config) const override {
    CnnKind& k = config->as<CnnKind>();
    if (k.channels != 0 || k.height != 0 || k.width != 0) return;
    if (images != nullptr && images->image_channels > 0) {
      k.channels = images->image_channels;
      k.height = images->image_height;
      k.width = images->image_width;
    } else if (const int side = SquareSide(n_in); side > 0) {
      k = CnnKind{1, side, side, k.layers};
    }
  }

  absl::StatusOr<Network> Build(const ModelConfig& config, int n_in,
                                int n_out) const override {
    const CnnKind& k = config.as<CnnKind>();
    Shape s{k.channels, k.height, k.width};
    const int64_t values = int64_t{k.channels} * k.height * k.width;
    if (k.channels < 1 || k.height < 1 || k.width < 1 || values != n_in) {
      return Refuse("model.cnn",
                    absl::StrCat("the input shape (channels x height x "
                                 "width) ",
                                 ShapeText(s), " does not match the ", n_in,
                                 " inputs of the data; set "
                                 "channels, height and width"));
    }
    Layers layers;
    bool flat = false;
    for (size_t i = 0; i < k.layers.size(); ++i) {
      SPARROW_RETURN_IF_ERROR(
          AddLayer(k.layers[i], absl::StrCat("model.cnn.layers[", i, "]"),
                   config, &layers, &s, &flat));
    }
    if (!flat) {
      return Refuse("model.cnn.layers",
                    "end with a flatten (and dense layers) before the output "
                    "layer");
    }
    SPARROW_RETURN_IF_ERROR(CheckLayerValues((int64_t{s.size()} + 1) * n_out,
                                             "model.cnn",
                                             "the output layer's parameters"));
    layers.push_back(
        std::make_shared<DenseLayer>(s.size(), n_out, Activation::kLinear, true,
                                     config.init, config.precision));
    return CheckedNetwork(std::move(layers), "model.cnn");
  }

  std::vector<std::string> LayerNames(
      const ModelConfig& config) const override {
    static constexpr const char* kNames[] = {"conv", "pool", "flatten",
                                             "dense"};
    int counts[4] = {0, 0, 0, 0};
    std::vector<std::string> names;
    for (const CnnLayerConfig& l : config.as<CnnKind>().layers) {
      const int t = static_cast<int>(l.type);
      names.push_back(absl::StrCat(kNames[t], ++counts[t]));
    }
    names.push_back("output");
    return names;
  }
};

}  // namespace

const ModelFamily& CnnKind::Family() {
  static const auto* const kFamily = new CnnFamily;
  return *kFamily;
}

}  // namespace sparrow::core
