#include "core/sysid/subspace.h"

#include <algorithm>
#include <cmath>
#include <complex>

#include "Eigen/Eigenvalues"
#include "Eigen/QR"
#include "Eigen/SVD"
#include "absl/strings/str_cat.h"

namespace sparrow::core::sysid {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// Columns of the data matrix factored at once: the running R factor is
// stacked on top of this many new rows, which bounds memory by the chunk
// rather than the record.
constexpr int kChunk = 2048;
// Rows of [U_f; U_p; Y_p; Y_f]: the factorization holds two (kChunk + rows) x
// rows matrices and two rows x rows ones, about 190 MB at this bound.
constexpr int kMaxHankelRows = 2000;

struct Sizes {
  int nu, ny, i;
  int m() const { return i * nu; }  // rows of U_f and of U_p
  int p() const { return i * ny; }  // rows of Y_p and of Y_f
  int64_t rows() const { return 2 * (int64_t{m()} + p()); }
};

// Row `row` of H^T for the Hankel column that starts at sample s: the future
// inputs, past inputs, past outputs, future outputs.
template <typename Row>
void HankelRow(const data::Trace& t, const Sizes& z, int s, Row&& row) {
  int c = 0;
  for (int k = 0; k < z.i; ++k, c += z.nu) {
    row.segment(c, z.nu) = t.u.col(s + z.i + k).transpose();
  }
  for (int k = 0; k < z.i; ++k, c += z.nu) {
    row.segment(c, z.nu) = t.u.col(s + k).transpose();
  }
  for (int k = 0; k < z.i; ++k, c += z.ny) {
    row.segment(c, z.ny) = t.y.col(s + k).transpose();
  }
  for (int k = 0; k < z.i; ++k, c += z.ny) {
    row.segment(c, z.ny) = t.y.col(s + z.i + k).transpose();
  }
}

// The lower-triangular L of H = L Q for H = [U_f; U_p; Y_p; Y_f] over all
// traces, as R^T of a QR of H^T updated chunk by chunk.
MatrixXd LqFactor(const std::vector<data::Trace>& traces, const Sizes& z) {
  const int n = z.rows();
  MatrixXd stacked = MatrixXd::Zero(n + kChunk, n);
  MatrixXd r = MatrixXd::Zero(n, n);
  int filled = 0;
  auto flush = [&] {
    stacked.topRows(n) = r;
    Eigen::HouseholderQR<MatrixXd> qr(stacked.topRows(n + filled));
    r = qr.matrixQR().topRows(n).triangularView<Eigen::Upper>();
    filled = 0;
  };
  for (const data::Trace& t : traces) {
    const int columns = t.length() - 2 * z.i + 1;
    for (int s = 0; s < columns; ++s) {
      HankelRow(t, z, s, stacked.row(n + filled));
      if (++filled == kChunk) flush();
    }
  }
  if (filled > 0) flush();
  return r.transpose();
}

// Gamma_i (i ny x nx) from the future-outputs-by-past block of L.
MatrixXd Observability(const MatrixXd& l, const Sizes& z, int nx) {
  const MatrixXd past_to_future =
      l.block(2 * z.m() + z.p(), z.m(), z.p(), z.m() + z.p());
  Eigen::BDCSVD<MatrixXd> svd(past_to_future, Eigen::ComputeThinU);
  const VectorXd root = svd.singularValues().head(nx).cwiseSqrt();
  return svd.matrixU().leftCols(nx) * root.asDiagonal();
}

double SpectralRadius(const MatrixXd& a) {
  const Eigen::EigenSolver<MatrixXd> eig(a, /*computeEigenvectors=*/false);
  double rho = 0.0;
  for (const std::complex<double>& v : eig.eigenvalues()) {
    rho = std::max(rho, std::abs(v));
  }
  return rho;
}

// The normal equations of one trace for [vec B; vec D; x0]: each sample's
// regressor rows are the output sensitivities C S_k to B (S_{k+1} = A S_k +
// dB u_k), u_k to D, and C A^k to x0.
struct TraceEquations {
  MatrixXd gram;  // (n_bd + nx) squared
  VectorXd rhs;
};

TraceEquations TraceNormalEquations(const data::Trace& tr,
                                    const LinearStateSpace& m, int n_bd,
                                    bool feedthrough) {
  const int nx = static_cast<int>(m.a.rows());
  const int ny = static_cast<int>(m.c.rows());
  const int nu = static_cast<int>(tr.u.rows());
  const int n_b = nx * nu;
  TraceEquations eq{MatrixXd::Zero(n_bd + nx, n_bd + nx),
                    VectorXd::Zero(n_bd + nx)};
  MatrixXd phi(ny, n_bd + nx), s = MatrixXd::Zero(nx, n_b), next_s(nx, n_b);
  MatrixXd x = MatrixXd::Identity(nx, nx), next_x(nx, nx);
  for (int k = 0; k < tr.length(); ++k) {
    phi.setZero();
    phi.leftCols(n_b).noalias() = m.c * s;
    for (int c = 0; c < nu && feedthrough; ++c) {
      for (int r = 0; r < ny; ++r) phi(r, n_b + c * ny + r) = tr.u(c, k);
    }
    phi.rightCols(nx).noalias() = m.c * x;
    eq.gram.selfadjointView<Eigen::Lower>().rankUpdate(phi.transpose());
    eq.rhs.noalias() += phi.transpose() * tr.y.col(k);
    next_s.noalias() = m.a * s;
    for (int c = 0; c < nu; ++c) {
      next_s.block(0, c * nx, nx, nx).diagonal().array() += tr.u(c, k);
    }
    s.swap(next_s);
    next_x.noalias() = m.a * x;
    x.swap(next_x);
  }
  eq.gram = MatrixXd(eq.gram.selfadjointView<Eigen::Lower>());
  return eq;
}

// A relative ridge keeps a solve defined when the data do not excite every
// direction (a constant input, a state a trace never reaches).
void AddRidge(MatrixXd* gram) {
  if (gram->size() == 0) return;
  gram->diagonal().array() += 1e-10 * std::max(gram->diagonal().mean(), 1e-300);
}

// B, D and (with fit_x0) every trace's initial state by least squares on the
// simulation error given A and C. Each x0 touches only its own trace's
// equations, so it is eliminated trace by trace (Schur complement) and
// recovered after B and D: memory and time stay linear in the traces.
void FitInputMatrices(const std::vector<data::Trace>& traces, bool feedthrough,
                      bool fit_x0, LinearStateSpace* m) {
  const int nx = static_cast<int>(m->a.rows());
  const int ny = static_cast<int>(m->c.rows());
  const int nu = static_cast<int>(traces.front().u.rows());
  const int n_b = nx * nu;
  const int n_bd = n_b + (feedthrough ? ny * nu : 0);
  MatrixXd gram = MatrixXd::Zero(n_bd, n_bd);
  VectorXd rhs = VectorXd::Zero(n_bd);
  // Per trace: G_xx^-1 G_xb and G_xx^-1 r_x, to recover x0.
  std::vector<MatrixXd> x_by_bd(traces.size());
  std::vector<VectorXd> x_free(traces.size());
  for (size_t t = 0; t < traces.size(); ++t) {
    TraceEquations eq = TraceNormalEquations(traces[t], *m, n_bd, feedthrough);
    gram += eq.gram.topLeftCorner(n_bd, n_bd);
    rhs += eq.rhs.head(n_bd);
    if (!fit_x0) continue;
    MatrixXd g_xx = eq.gram.bottomRightCorner(nx, nx);
    AddRidge(&g_xx);
    const Eigen::LDLT<MatrixXd> solve_x(g_xx);
    x_by_bd[t] = solve_x.solve(eq.gram.bottomLeftCorner(nx, n_bd));
    x_free[t] = solve_x.solve(eq.rhs.tail(nx));
    gram.noalias() -= eq.gram.topRightCorner(n_bd, nx) * x_by_bd[t];
    rhs.noalias() -= eq.gram.topRightCorner(n_bd, nx) * x_free[t];
  }
  AddRidge(&gram);
  const VectorXd theta = gram.ldlt().solve(rhs);
  m->b = Eigen::Map<const MatrixXd>(theta.data(), nx, nu);
  m->d = feedthrough
             ? MatrixXd(Eigen::Map<const MatrixXd>(theta.data() + n_b, ny, nu))
             : MatrixXd::Zero(ny, nu);
  m->x0.assign(traces.size(), VectorXd::Zero(nx));
  for (size_t t = 0; t < traces.size() && fit_x0; ++t) {
    m->x0[t] = x_free[t] - x_by_bd[t] * theta;
  }
}

absl::Status CheckSizes(const std::vector<data::Trace>& traces, const Sizes& z,
                        int nx) {
  if (z.rows() > kMaxHankelRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("the linear fit's Hankel matrices would have ", z.rows(),
                     " rows (2 x ", z.i, " block rows x (", z.nu, " inputs + ",
                     z.ny, " outputs)); at most ", kMaxHankelRows,
                     " are allowed: use a smaller nx or fewer block rows"));
  }
  if (nx < 1 || z.i <= nx) {
    return absl::InvalidArgumentError(
        absl::StrCat("the subspace fit needs 1 <= nx < block rows (nx ", nx,
                     ", block rows ", z.i, ")"));
  }
  int64_t columns = 0;
  for (const data::Trace& t : traces) {
    columns += std::max(0, t.length() - 2 * z.i + 1);
  }
  if (columns < z.rows()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training traces are too short for the linear fit: its Hankel "
        "matrices with ",
        z.i, " block rows need ", z.rows(), " columns, the data give ", columns,
        "; use longer traces or a smaller nx"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t SubspaceScratchBytes(int nu, int ny, const SubspaceOptions& options) {
  const int i = options.block_rows > 0 ? options.block_rows
                                       : std::max(2 * options.nx, 10);
  const double rows = 2.0 * i * (static_cast<double>(nu) + ny);
  // The stacked chunk and the QR's copy of it, R and L.
  const double doubles = 2.0 * (kChunk + rows) * rows + 2.0 * rows * rows;
  return static_cast<int64_t>(
      std::min(doubles * sizeof(double), 4.0e18));  // saturate, not overflow
}

absl::StatusOr<LinearStateSpace> FitSubspace(
    const std::vector<data::Trace>& traces, const SubspaceOptions& options) {
  if (traces.empty()) {
    return absl::InvalidArgumentError("the linear fit has no training traces");
  }
  const int nx = options.nx;
  const Sizes z{
      static_cast<int>(traces.front().u.rows()),
      static_cast<int>(traces.front().y.rows()),
      options.block_rows > 0 ? options.block_rows : std::max(2 * nx, 10)};
  if (absl::Status s = CheckSizes(traces, z, nx); !s.ok()) return s;
  const MatrixXd gamma = Observability(LqFactor(traces, z), z, nx);
  LinearStateSpace m;
  m.c = gamma.topRows(z.ny);
  const int shifted = (z.i - 1) * z.ny;
  m.a = gamma.topRows(shifted).completeOrthogonalDecomposition().solve(
      gamma.bottomRows(shifted));
  m.spectral_radius = SpectralRadius(m.a);
  if (!std::isfinite(m.spectral_radius)) {
    return absl::InvalidArgumentError(
        "the linear fit failed: the data give a non-finite state matrix");
  }
  if (m.spectral_radius >= 1.0) {
    m.a *= 0.99 / m.spectral_radius;
    m.stabilized = true;
  }
  FitInputMatrices(traces, options.feedthrough, options.fit_initial_states, &m);
  return m;
}

Eigen::MatrixXd SimulateLinear(const LinearStateSpace& m,
                               const Eigen::MatrixXd& u,
                               const Eigen::VectorXd& x0) {
  MatrixXd y(m.c.rows(), u.cols());
  VectorXd x = x0, next(x0.size());
  for (Eigen::Index k = 0; k < u.cols(); ++k) {
    y.col(k).noalias() = m.c * x + m.d * u.col(k);
    next.noalias() = m.a * x + m.b * u.col(k);
    x.swap(next);
  }
  return y;
}

}  // namespace sparrow::core::sysid
