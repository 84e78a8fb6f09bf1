// Proximal operators of the non-smooth regularizers (ALGORITHMS.md §0): prox_{c
// g}(v) = argmin_x c g(x) + 1/2 |x - v|^2, applied in place. In the ADMM of
// Bemporad §4, c = 1/rho.
//
// Each operator is a small immutable policy object, safe to share between
// threads.
#ifndef SPARROW_CORE_REGULARIZERS_PROXIMAL_H_
#define SPARROW_CORE_REGULARIZERS_PROXIMAL_H_

#include <memory>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"

namespace sparrow::core {

class Proximal {
 public:
  virtual ~Proximal() = default;
  // v <- prox_{c g}(v).
  virtual void Apply(double c, Eigen::Ref<Eigen::VectorXd> v) const = 0;
  // g(x); +Inf outside the feasible set of an indicator.
  virtual double Value(const Eigen::Ref<const Eigen::VectorXd>& x) const = 0;
  virtual std::string Name() const = 0;
};

// g = tau |x|_1: soft threshold at c tau.
std::unique_ptr<Proximal> MakeL1(double tau);
// g = sum_i w_i |x_i| (SBDL's reweighted l1): elementwise soft threshold at c
// w_i.
std::unique_ptr<Proximal> MakeWeightedL1(Eigen::VectorXd weights);
// g = tau |x|_0: keep v_i iff v_i^2 >= 2 c tau (the corrected threshold,
// ALGORITHMS.md §2.9).
std::unique_ptr<Proximal> MakeL0(double tau);
// g = tau sum_G |x_G|_2 over disjoint index groups: block soft threshold at c
// tau. Indices not in any group are left unchanged.
std::unique_ptr<Proximal> MakeGroupLasso(double tau,
                                         std::vector<std::vector<int>> groups);
// Indicator of a finite set of levels: the nearest level (ties go to the larger
// level, so binary rounding sends 0.5 to 1 as in Bemporad eq. 29).
absl::StatusOr<std::unique_ptr<Proximal>> MakeQuantization(
    std::vector<double> levels);
// Indicator of {0, 1}: 0 if v < 0.5, else 1.
std::unique_ptr<Proximal> MakeBinary();

}  // namespace sparrow::core

#endif  // SPARROW_CORE_REGULARIZERS_PROXIMAL_H_
