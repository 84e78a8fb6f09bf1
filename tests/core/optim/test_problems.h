// Small objectives with known minimizers for optimizer tests.
#ifndef SPARROW_TESTS_CORE_OPTIM_TEST_PROBLEMS_H_
#define SPARROW_TESTS_CORE_OPTIM_TEST_PROBLEMS_H_

#include <numeric>
#include <vector>

#include "core/optim/problem.h"

namespace sparrow::core::testing {

// Least squares 1/(2N) |X^T w - y|^2 with a planted solution, split into
// `batches` minibatches.
class LeastSquares : public Objective {
 public:
  LeastSquares(int n, int samples, int batches, uint64_t seed)
      : batches_(batches) {
    Rng rng(seed);
    x_.resize(n, samples);
    for (int i = 0; i < x_.size(); ++i) x_.data()[i] = rng.Normal();
    solution_.resize(n);
    for (int i = 0; i < n; ++i) solution_(i) = rng.Normal();
    y_ = x_.transpose() * solution_;
    order_.resize(samples);
    std::iota(order_.begin(), order_.end(), 0);
  }
  int num_params() const override { return static_cast<int>(x_.rows()); }
  int num_batches() const override { return batches_; }
  void StartEpoch(const Eigen::VectorXd&, Rng* rng) override {
    std::iota(order_.begin(), order_.end(), 0);
    rng->Shuffle(&order_);
  }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override {
    const Eigen::VectorXd r = x_.transpose() * w - y_;
    if (grad) *grad = x_ * r / r.size();
    return 0.5 * r.squaredNorm() / r.size();
  }
  double EvaluateBatch(const Eigen::VectorXd& w, int b,
                       Eigen::VectorXd* grad) override {
    const int n = static_cast<int>(order_.size());
    const int begin = b * n / batches_;
    const int end = (b + 1) * n / batches_;
    grad->setZero(w.size());
    double f = 0.0;
    for (int i = begin; i < end; ++i) {
      const double r = x_.col(order_[i]).dot(w) - y_(order_[i]);
      *grad += r * x_.col(order_[i]);
      f += 0.5 * r * r;
    }
    *grad /= (end - begin);
    return f / (end - begin);
  }
  const Eigen::VectorXd& solution() const { return solution_; }

 private:
  int batches_;
  Eigen::MatrixXd x_;
  Eigen::VectorXd y_, solution_;
  std::vector<int> order_;
};

// Rosenbrock in n dimensions; minimum 0 at (1, ..., 1).
class Rosenbrock : public Objective {
 public:
  explicit Rosenbrock(int n) : n_(n) {}
  int num_params() const override { return n_; }
  double Evaluate(const Eigen::VectorXd& w, Eigen::VectorXd* grad) override {
    double f = 0.0;
    if (grad) grad->setZero(n_);
    for (int i = 0; i + 1 < n_; ++i) {
      const double a = w(i + 1) - w(i) * w(i);
      const double b = 1.0 - w(i);
      f += 100.0 * a * a + b * b;
      if (grad) {
        (*grad)(i) += -400.0 * a * w(i) - 2.0 * b;
        (*grad)(i + 1) += 200.0 * a;
      }
    }
    return f;
  }

 private:
  int n_;
};

}  // namespace sparrow::core::testing

#endif  // SPARROW_TESTS_CORE_OPTIM_TEST_PROBLEMS_H_
