// Scaling of one Gauss-Newton normal-equation build, H = A^T A and g = A^T b
// (SequenceLeastSquares::NormalEquations: simulation, forward sensitivities
// M_kx, M_ktheta (Bemporad eq. 8-9), row blocks and rank updates), i.e. the
// model work of one NAILS/NAILM epoch, for the MR-damper-shaped state-space RNN
// of Bemporad Sec. 5.1 (nx = 4, f_x and f_y with one hidden layer of 4 tanh
// units, feedthrough, free x0 per trace, nu = ny = 1; MSE, rho_x0 = 1,
// rho_theta = 0.1):
//
//   BM_NormalEquationsVsSamples/N    one trace of N samples, 1 thread,
//                                    N = 500 ... 8000: cost per sample should
//                                    stay flat (the rows are accumulated in
//                                    blocks, memory does not grow with N).
//   BM_NormalEquationsVsThreads/T    10 traces of 2000 samples, T = 1, 2
//                                    threads (SequenceLeastSquares spreads the
//                                    traces over its threads, each with its own
//                                    accumulator, and sums them).
//   BM_SilverboxVsTraces/M           the Silverbox model of Sec. 5.1.1 (nx = 8,
//                                    3 x 8 tanh layers in fx and fy, encoder,
//                                    649 parameters) on M traces of 8600
//                                    samples, 1 thread: the paper's training
//                                    set is M = 10 (86 000 rows).
//   BM_SilverboxVsThreads/T          the same on M = 10 traces, T = 1, 2.
//   BM_SilverboxOneTraceVsThreads/T  one trace of 8600 samples, T = 1, 2: with
//                                    2 threads the sensitivity recursion and
//                                    the rank updates are pipelined.
//
// The data are synthetic (smooth random multisine input through a saturating
// first-order system, z-scored), seeded, so runs are comparable. items =
// samples (time steps), so items_per_second is samples per second. Wall-clock
// time (UseRealTime), since the threaded variant works on other threads. See
// bench/README.md.
#include <benchmark/benchmark.h>

#include <cmath>
#include <vector>

#include "Eigen/Core"
#include "bench/bench_common.h"
#include "core/data/dataset.h"
#include "core/losses/loss.h"
#include "core/models/state_space_rnn.h"
#include "core/optim/gauss_newton/least_squares.h"
#include "core/util/random.h"

namespace sparrow::core {
namespace {

using bench::DamperSpec;
using bench::SyntheticTrace;

Eigen::VectorXd Theta(const StateSpaceRnn& rnn) {
  return bench::DamperTheta(rnn);
}

void Run(benchmark::State& state, const std::vector<data::Trace>& traces,
         int threads, const StateSpaceRnnSpec& spec, double rho_x0,
         double rho_theta) {
  const StateSpaceRnn rnn(spec);
  const Eigen::VectorXd theta = Theta(rnn);
  SequenceLeastSquares problem(&rnn, &traces, Loss{}, rho_x0, rho_theta,
                               threads);
  Eigen::MatrixXd h;
  Eigen::VectorXd g;
  for (auto _ : state) {
    benchmark::DoNotOptimize(problem.NormalEquations(theta, &h, &g));
    benchmark::ClobberMemory();
  }
  int64_t samples = 0;
  for (const data::Trace& t : traces) samples += t.length();
  state.SetItemsProcessed(state.iterations() * samples);
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["traces"] = static_cast<double>(traces.size());
  state.counters["threads"] = threads;
  state.counters["params"] = rnn.num_params();
  state.SetLabel("synthetic");
}

void Run(benchmark::State& state, const std::vector<data::Trace>& traces,
         int threads) {
  Run(state, traces, threads, DamperSpec(static_cast<int>(traces.size())),
      /*rho_x0=*/1.0, /*rho_theta=*/0.1);
}

// M traces of 8600 samples, as the paper's Silverbox training set; rho as in
// examples/silverbox_nailm.json.
void RunSilverbox(benchmark::State& state, int traces, int threads) {
  std::vector<data::Trace> data;
  for (int i = 0; i < traces; ++i) data.push_back(SyntheticTrace(8600, 7 + i));
  Run(state, data, threads, bench::SilverboxSpec(), /*rho_x0=*/0.1,
      /*rho_theta=*/0.01);
}

// (a) One trace of N = state.range(0) samples, single thread.
void BM_NormalEquationsVsSamples(benchmark::State& state) {
  const std::vector<data::Trace> traces = {
      SyntheticTrace(static_cast<int>(state.range(0)), 7)};
  Run(state, traces, 1);
}
BENCHMARK(BM_NormalEquationsVsSamples)
    ->ArgName("N")
    ->Arg(500)
    ->Arg(1000)
    ->Arg(2000)
    ->Arg(4000)
    ->Arg(8000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// (b) 10 traces of 2000 samples on T = state.range(0) threads.
void BM_NormalEquationsVsThreads(benchmark::State& state) {
  std::vector<data::Trace> traces;
  for (int i = 0; i < 10; ++i) traces.push_back(SyntheticTrace(2000, 7 + i));
  Run(state, traces, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_NormalEquationsVsThreads)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// (c) The Silverbox model on M = state.range(0) traces, single thread.
void BM_SilverboxVsTraces(benchmark::State& state) {
  RunSilverbox(state, static_cast<int>(state.range(0)), 1);
}
BENCHMARK(BM_SilverboxVsTraces)
    ->ArgName("M")
    ->Arg(1)
    ->Arg(2)
    ->Arg(5)
    ->Arg(10)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// (d) The Silverbox model on 10 traces, T = state.range(0) threads.
void BM_SilverboxVsThreads(benchmark::State& state) {
  RunSilverbox(state, 10, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_SilverboxVsThreads)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// (e) The Silverbox model on one trace, T = state.range(0) threads.
void BM_SilverboxOneTraceVsThreads(benchmark::State& state) {
  RunSilverbox(state, 1, static_cast<int>(state.range(0)));
}
BENCHMARK(BM_SilverboxOneTraceVsThreads)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace sparrow::core

BENCHMARK_MAIN();
