// Micro benchmarks of the model kernels every optimizer spends its time in, at
// realistic sizes:
//
//   Damper*: the NAILS MR-damper state-space RNN (Bemporad Sec. 5.1: nx = 4,
//   f_x and f_y with one
//            hidden layer of 4 tanh units, feedthrough, free x0, nu = ny = 1)
//            on the N = 2000 training samples of
//            ../shared/data/mr_damper/mrdamper.csv (z-scored), or on a smooth
//            synthetic trace of the same length when the file is not there.
//   Narx*:   a 3x10 tanh MLP on NARX regressors with 19 input and 19 output
//   lags plus feedthrough
//            (39 inputs, 631 parameters) over 1024 one-step samples of the
//            synthetic cascaded tanks.
//
// Every benchmark reports items = samples (time steps), so items_per_second is
// samples per second and its inverse is the per-sample time. Single thread. See
// bench/README.md.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "bench/bench_common.h"
#include "core/data/csv.h"
#include "core/data/dataset.h"
#include "core/data/narx.h"
#include "core/data/synthetic.h"
#include "core/losses/loss.h"
#include "core/models/mlp.h"
#include "core/models/state_space_rnn.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "core/train/objectives.h"
#include "core/util/random.h"

namespace sparrow::core {
namespace {

constexpr int kDamperSamples = 2000;
constexpr int kNarxSamples = 1024;
constexpr int kNarxLags = 19;

using bench::ZScoreRows;

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Candidate locations of the damper record: $SPARROW_DAMPER_CSV, relative to
// the working directory (the repo root), and relative to this executable
// (build/bin/models_bench).
std::vector<std::string> DamperCsvCandidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("SPARROW_DAMPER_CSV")) paths.push_back(env);
  const std::string rel = "../shared/data/mr_damper/mrdamper.csv";
  paths.push_back(rel);
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    std::string dir(exe);
    dir = dir.substr(0, dir.rfind('/'));
    paths.push_back(dir + "/../../" + rel);
  }
  return paths;
}

// The damper training trace (u = V, y = F, first 2000 rows), z-scored as the
// trainer does.
struct DamperData {
  std::vector<data::Trace> traces;
  std::string source;
};

const DamperData& Damper() {
  static const DamperData d = [] {
    DamperData out;
    data::Trace t;
    for (const std::string& path : DamperCsvCandidates()) {
      const std::string text = ReadFileOrEmpty(path);
      if (text.empty()) continue;
      auto table = data::ParseCsv(text, {"V", "F"});
      if (!table.ok() || table->num_rows() < kDamperSamples) continue;
      t.u = table->values.row(0).leftCols(kDamperSamples);
      t.y = table->values.row(1).leftCols(kDamperSamples);
      out.source = "mrdamper.csv";
      break;
    }
    if (out.source.empty()) {
      t = bench::SyntheticTrace(kDamperSamples, 7);
      out.source = "synthetic";
    }
    ZScoreRows(&t.u);
    ZScoreRows(&t.y);
    out.traces.push_back(std::move(t));
    return out;
  }();
  return d;
}

using bench::DamperSpec;
using bench::DamperTheta;

void BM_DamperSimulate(benchmark::State& state) {
  const DamperData& d = Damper();
  const StateSpaceRnn rnn(DamperSpec());
  const Eigen::VectorXd theta = DamperTheta(rnn);
  const data::Trace& tr = d.traces[0];
  StateSpaceRnn::Tape tape;
  for (auto _ : state) {
    rnn.Simulate(theta.data(), tr.u, tr.y, 0, &tape);
    benchmark::DoNotOptimize(tape.outputs().data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * tr.length());
  state.SetLabel(d.source);
}
BENCHMARK(BM_DamperSimulate);

// One full-BPTT epoch: simulate, loss, backpropagate, regularize (what
// Adam/AMSGrad do per epoch).
void BM_DamperGradient(benchmark::State& state) {
  const DamperData& d = Damper();
  const StateSpaceRnn rnn(DamperSpec());
  const Eigen::VectorXd theta = DamperTheta(rnn);
  SequenceObjective objective(&rnn, &d.traces, Loss{}, /*rho_x0=*/1.0,
                              /*rho_theta=*/0.1,
                              /*bptt_window=*/0, /*shuffle=*/false);
  Eigen::VectorXd grad(rnn.num_params());
  for (auto _ : state) {
    double value = objective.Evaluate(theta, &grad);
    benchmark::DoNotOptimize(value);
    benchmark::DoNotOptimize(grad.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * d.traces[0].length());
  state.SetLabel(d.source);
}
BENCHMARK(BM_DamperGradient);

// Output sensitivities d yhat_k / d theta for all 2000 steps (the Gauss-Newton
// rows), after one Simulate outside the timed loop; the rows are summed into a
// sink.
void BM_DamperJacobians(benchmark::State& state) {
  const DamperData& d = Damper();
  const StateSpaceRnn rnn(DamperSpec());
  const Eigen::VectorXd theta = DamperTheta(rnn);
  const data::Trace& tr = d.traces[0];
  StateSpaceRnn::Tape tape;
  rnn.Simulate(theta.data(), tr.u, tr.y, 0, &tape);
  Eigen::MatrixXd sink = Eigen::MatrixXd::Zero(rnn.spec().ny, rnn.num_params());
  for (auto _ : state) {
    rnn.OutputJacobians(theta.data(), 0, &tape,
                        [&sink](int, const RowMatrixXd& jac) { sink += jac; });
    benchmark::DoNotOptimize(sink.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * tr.length());
  state.counters["params"] = rnn.num_params();
  state.SetLabel(d.source);
}
BENCHMARK(BM_DamperJacobians);

// One NAILS/NAILM epoch's normal equations H = A^T A, g = A^T b (the
// sensitivities, row blocks and rank updates after a reused simulation, as in
// an epoch after an accepted trial) on the damper, on 1 thread or - the
// argument - 2 (the trace split in time). Wall-clock time.
void BM_DamperNormalEquations(benchmark::State& state) {
  const DamperData& d = Damper();
  const StateSpaceRnn rnn(DamperSpec());
  const Eigen::VectorXd theta = DamperTheta(rnn);
  SequenceLeastSquares problem(&rnn, &d.traces, Loss{}, 1.0, 0.1,
                               static_cast<int>(state.range(0)));
  Eigen::MatrixXd h;
  Eigen::VectorXd g;
  for (auto _ : state) {
    benchmark::DoNotOptimize(problem.NormalEquations(theta, &h, &g));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * d.traces[0].length());
  state.counters["params"] = rnn.num_params();
  state.SetLabel(d.source);
}
BENCHMARK(BM_DamperNormalEquations)->Arg(1)->Arg(2)->UseRealTime();

// NARX regressors (39 x 1024) and targets (1 x 1024) from the synthetic
// cascaded tanks.
struct NarxData {
  Eigen::MatrixXd x, y;
};

const NarxData& Narx() {
  static const NarxData d = [] {
    data::CascadedTanksOptions opt;
    opt.samples = kNarxSamples + kNarxLags;
    opt.seed = 1;
    opt.noise_std = 0.05;
    auto seq = data::GenerateCascadedTanks(opt);
    if (!seq.ok()) std::abort();
    data::SequenceData sd;
    sd.n_u = 1;
    sd.n_y = 1;
    sd.input_names = {"u"};
    sd.output_names = {"y"};
    data::Trace t;
    t.u = seq->u;
    t.y = seq->y;
    ZScoreRows(&t.u);
    ZScoreRows(&t.y);
    sd.traces.push_back(std::move(t));
    data::NarxLags lags;
    lags.input_lags = kNarxLags;
    lags.output_lags = kNarxLags;
    lags.feedthrough = true;
    auto table = data::BuildNarxRegressors(sd, lags);
    if (!table.ok() || table->num_samples() != kNarxSamples) std::abort();
    return NarxData{table->x, table->y};
  }();
  return d;
}

Mlp NarxMlp() {
  MlpSpec s;
  s.inputs = static_cast<int>(Narx().x.rows());
  s.hidden = {10, 10, 10};
  s.outputs = 1;
  s.hidden_activation = Activation::kTanh;
  s.output_activation = Activation::kLinear;
  return Mlp(s);
}

Eigen::VectorXd NarxTheta(const Mlp& mlp) {
  Eigen::VectorXd theta(mlp.num_params());
  Rng rng(1);
  mlp.Initialize(1.0, &rng, theta.data());
  return theta;
}

void SetNarxCounters(benchmark::State& state, const Mlp& mlp) {
  state.SetItemsProcessed(state.iterations() * kNarxSamples);
  state.counters["params"] = mlp.num_params();
  state.counters["inputs"] = mlp.inputs();
}

void BM_NarxForward(benchmark::State& state) {
  const NarxData& d = Narx();
  const Mlp mlp = NarxMlp();
  const Eigen::VectorXd theta = NarxTheta(mlp);
  Mlp::Cache cache;
  for (auto _ : state) {
    mlp.Forward(theta.data(), d.x, &cache);
    benchmark::DoNotOptimize(cache.output().data());
    benchmark::ClobberMemory();
  }
  SetNarxCounters(state, mlp);
}
BENCHMARK(BM_NarxForward);

// Full-batch loss and gradient (forward + backward + L2), one epoch of a
// full-batch method.
void BM_NarxGradient(benchmark::State& state) {
  const NarxData& d = Narx();
  const Mlp mlp = NarxMlp();
  const Eigen::VectorXd theta = NarxTheta(mlp);
  TableObjective objective(&mlp, &d.x, &d.y, Loss{}, /*rho_theta=*/0.1,
                           /*batch_size=*/0,
                           /*shuffle=*/false);
  Eigen::VectorXd grad(mlp.num_params());
  for (auto _ : state) {
    double value = objective.Evaluate(theta, &grad);
    benchmark::DoNotOptimize(value);
    benchmark::DoNotOptimize(grad.data());
    benchmark::ClobberMemory();
  }
  SetNarxCounters(state, mlp);
}
BENCHMARK(BM_NarxGradient);

// Per-sample parameter Jacobians (1 x 631 rows) of all 1024 samples after one
// Forward outside the timed loop; the rows of each column are kept
// observable.
void BM_NarxJacobians(benchmark::State& state) {
  const NarxData& d = Narx();
  const Mlp mlp = NarxMlp();
  const Eigen::VectorXd theta = NarxTheta(mlp);
  Mlp::Cache cache;
  mlp.Forward(theta.data(), d.x, &cache);
  RowMatrixXd jac(mlp.outputs(), mlp.num_params());
  RowMatrixXd no_input_jac(mlp.outputs(), 0);
  // Only the kernel is timed: each column's rows are kept observable, not
  // summed (a sum over the rows would cost more than the kernel itself).
  for (auto _ : state) {
    for (int col = 0; col < kNarxSamples; ++col) {
      mlp.Jacobian(theta.data(), col, &cache, jac, no_input_jac);
      benchmark::DoNotOptimize(jac.data());
      benchmark::ClobberMemory();
    }
  }
  SetNarxCounters(state, mlp);
}
BENCHMARK(BM_NarxJacobians);

// Diagonal GGN of the MSE loss over all 1024 samples after one Forward outside
// the timed loop.
void BM_NarxDiagGgn(benchmark::State& state) {
  const NarxData& d = Narx();
  const Mlp mlp = NarxMlp();
  const Eigen::VectorXd theta = NarxTheta(mlp);
  Mlp::Cache cache;
  mlp.Forward(theta.data(), d.x, &cache);
  Eigen::MatrixXd sqrt_curv(mlp.outputs(), kNarxSamples);
  Loss{}.Curvature(d.y, cache.output(), sqrt_curv);
  sqrt_curv = sqrt_curv.cwiseSqrt();
  Eigen::VectorXd diag = Eigen::VectorXd::Zero(mlp.num_params());
  for (auto _ : state) {
    mlp.AccumulateDiagGgn(theta.data(), sqrt_curv, &cache, diag.data());
    benchmark::DoNotOptimize(diag.data());
    benchmark::ClobberMemory();
  }
  SetNarxCounters(state, mlp);
}
BENCHMARK(BM_NarxDiagGgn);

}  // namespace
}  // namespace sparrow::core

BENCHMARK_MAIN();
