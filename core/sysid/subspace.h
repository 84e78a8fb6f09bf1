// Linear state-space identification from input-output records by PO-MOESP
// (Verhaegen, "Identification of the deterministic part of MIMO state space
// models given in innovations form from input-output data", Automatica 30(1),
// 1994; Katayama, "Subspace Methods for System Identification", Springer 2005,
// ch. 9):
//
//   1. the LQ factor of the block-Hankel matrix [U_f; U_p; Y_p; Y_f] of every
//      trace (i block rows of past and of future samples);
//   2. the extended observability matrix Gamma_i from the SVD of the block of
//      L that maps the past (U_p, Y_p) to the future outputs Y_f;
//   3. C = the first block row of Gamma_i, A from its shift structure;
//   4. B, D and every trace's initial state by linear least squares on the
//      simulation error, given A and C.
//
// The result initializes the linear part of a linear-plus-neural state-space
// model (StateSpaceRnnSpec::linear), so training starts at the best linear
// model of order nx. Eigen only, no I/O.
#ifndef SPARROW_CORE_SYSID_SUBSPACE_H_
#define SPARROW_CORE_SYSID_SUBSPACE_H_

#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "core/data/dataset.h"

namespace sparrow::core::sysid {

// x+ = A x + B u, y = C x + D u.
struct LinearStateSpace {
  Eigen::MatrixXd a;                // nx x nx
  Eigen::MatrixXd b;                // nx x nu
  Eigen::MatrixXd c;                // ny x nx
  Eigen::MatrixXd d;                // ny x nu (zero without feedthrough)
  std::vector<Eigen::VectorXd> x0;  // every trace's initial state (or 0)
  // The spectral radius of A as identified, before any stabilization.
  double spectral_radius = 0.0;
  bool stabilized = false;  // A was scaled to a spectral radius below 1
};

struct SubspaceOptions {
  int nx = 0;
  // Block rows i of the past and of the future Hankel matrices; must exceed
  // nx. 0: max(2 nx, 10).
  int block_rows = 0;
  bool feedthrough = true;  // false: D = 0
  // Fit every trace's initial state with B and D; false: x0 = 0 (a model
  // whose initial state is zero or comes from an encoder).
  bool fit_initial_states = true;
};

// The model of order options.nx that PO-MOESP finds in `traces` (all with the
// same channels). An A with spectral radius >= 1 is scaled to 0.99 (its
// simulation over a long record would diverge), and `stabilized` says so.
// InvalidArgument when the records are too short for the Hankel matrices
// (they need at least 2 i (nu + ny) columns in all) or nx is out of range.
absl::StatusOr<LinearStateSpace> FitSubspace(
    const std::vector<data::Trace>& traces, const SubspaceOptions& options);

// The scratch FitSubspace allocates for nu inputs and ny outputs (the Hankel
// chunk, its QR and the R factor), in bytes, for memory estimates.
int64_t SubspaceScratchBytes(int nu, int ny, const SubspaceOptions& options);

// Simulates `model` on inputs u (nu x N) from x0: ny x N outputs.
Eigen::MatrixXd SimulateLinear(const LinearStateSpace& model,
                               const Eigen::MatrixXd& u,
                               const Eigen::VectorXd& x0);

}  // namespace sparrow::core::sysid

#endif  // SPARROW_CORE_SYSID_SUBSPACE_H_
