#include "core/regularizers/proximal.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace sparrow::core {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double SoftThreshold(double v, double t) {
  return v > t ? v - t : (v < -t ? v + t : 0.0);
}

class L1 : public Proximal {
 public:
  explicit L1(double tau) : tau_(tau) {}
  void Apply(double c, Eigen::Ref<Eigen::VectorXd> v) const override {
    const double t = c * tau_;
    for (Eigen::Index i = 0; i < v.size(); ++i) v(i) = SoftThreshold(v(i), t);
  }
  double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const override {
    return tau_ * x.lpNorm<1>();
  }
  std::string Name() const override {
    return absl::StrCat("l1(tau=", tau_, ")");
  }

 private:
  double tau_;
};

class WeightedL1 : public Proximal {
 public:
  explicit WeightedL1(Eigen::VectorXd w) : w_(std::move(w)) {}
  void Apply(double c, Eigen::Ref<Eigen::VectorXd> v) const override {
    for (Eigen::Index i = 0; i < v.size(); ++i)
      v(i) = SoftThreshold(v(i), c * w_(i));
  }
  double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const override {
    return w_.cwiseProduct(x.cwiseAbs()).sum();
  }
  std::string Name() const override { return "weighted_l1"; }

 private:
  Eigen::VectorXd w_;
};

class L0 : public Proximal {
 public:
  explicit L0(double tau) : tau_(tau) {}
  void Apply(double c, Eigen::Ref<Eigen::VectorXd> v) const override {
    // Per coordinate: zero costs v^2/2, keeping costs c tau; keep iff v^2 >= 2
    // c tau.
    const double threshold = 2.0 * c * tau_;
    for (Eigen::Index i = 0; i < v.size(); ++i) {
      if (v(i) * v(i) < threshold) v(i) = 0.0;
    }
  }
  double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const override {
    return tau_ * static_cast<double>((x.array() != 0.0).count());
  }
  std::string Name() const override {
    return absl::StrCat("l0(tau=", tau_, ")");
  }

 private:
  double tau_;
};

class GroupLasso : public Proximal {
 public:
  GroupLasso(double tau, std::vector<std::vector<int>> groups)
      : tau_(tau), groups_(std::move(groups)) {}
  void Apply(double c, Eigen::Ref<Eigen::VectorXd> v) const override {
    const double t = c * tau_;
    for (const std::vector<int>& g : groups_) {
      double norm2 = 0.0;
      for (int i : g) norm2 += v(i) * v(i);
      const double norm = std::sqrt(norm2);
      // Guard |v_G| = 0: the whole group is already zero.
      const double scale = norm > t ? 1.0 - t / norm : 0.0;
      for (int i : g) v(i) *= scale;
    }
  }
  double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const override {
    double sum = 0.0;
    for (const std::vector<int>& g : groups_) {
      double norm2 = 0.0;
      for (int i : g) norm2 += x(i) * x(i);
      sum += std::sqrt(norm2);
    }
    return tau_ * sum;
  }
  std::string Name() const override {
    return absl::StrCat("group_lasso(tau=", tau_, ")");
  }

 private:
  double tau_;
  std::vector<std::vector<int>> groups_;
};

class Quantization : public Proximal {
 public:
  explicit Quantization(std::vector<double> levels)
      : levels_(std::move(levels)) {}
  void Apply(double, Eigen::Ref<Eigen::VectorXd> v) const override {
    for (Eigen::Index i = 0; i < v.size(); ++i) v(i) = Nearest(v(i));
  }
  double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const override {
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      if (!std::binary_search(levels_.begin(), levels_.end(), x(i)))
        return kInf;
    }
    return 0.0;
  }
  std::string Name() const override { return "quantization"; }

 private:
  double Nearest(double x) const {
    auto hi = std::lower_bound(levels_.begin(), levels_.end(), x);
    if (hi == levels_.begin()) return *hi;
    if (hi == levels_.end()) return levels_.back();
    auto lo = hi - 1;
    return (x - *lo) < (*hi - x) ? *lo : *hi;
  }
  std::vector<double> levels_;  // sorted, unique
};

}  // namespace

std::unique_ptr<Proximal> MakeL1(double tau) {
  return std::make_unique<L1>(tau);
}
std::unique_ptr<Proximal> MakeWeightedL1(Eigen::VectorXd weights) {
  return std::make_unique<WeightedL1>(std::move(weights));
}
std::unique_ptr<Proximal> MakeL0(double tau) {
  return std::make_unique<L0>(tau);
}
std::unique_ptr<Proximal> MakeGroupLasso(double tau,
                                         std::vector<std::vector<int>> groups) {
  return std::make_unique<GroupLasso>(tau, std::move(groups));
}

absl::StatusOr<std::unique_ptr<Proximal>> MakeQuantization(
    std::vector<double> levels) {
  if (levels.empty()) {
    return absl::InvalidArgumentError(
        "quantization.levels is empty; list the allowed values");
  }
  for (double l : levels) {
    if (!std::isfinite(l)) {
      return absl::InvalidArgumentError(
          "quantization.levels must be finite numbers");
    }
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  return std::unique_ptr<Proximal>(
      std::make_unique<Quantization>(std::move(levels)));
}

std::unique_ptr<Proximal> MakeBinary() {
  return std::make_unique<Quantization>(std::vector<double>{0.0, 1.0});
}

}  // namespace sparrow::core
