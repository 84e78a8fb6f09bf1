#include "core/train/state_groups.h"

#include <algorithm>

namespace sparrow::core {

namespace {

// State i's entries of the linear part: column i of A and of C (they read
// x_i) and row i of B (it drives x_i). Groups must not overlap (ADMM's group
// Lasso copies each entry once), so row i of A stays with the states it
// reads; zeroing column i of A and C already cuts x_i off the output.
void AddLinearTerms(const StateSpaceRnn& rnn, int i, std::vector<int>* g) {
  const int nx = rnn.spec().nx;
  for (int r = 0; r < nx; ++r) g->push_back(rnn.ab_offset() + i * nx + r);
  for (int c = nx; c < rnn.fx().inputs(); ++c) {
    g->push_back(rnn.ab_offset() + c * nx + i);
  }
  const int ny = rnn.spec().ny;
  for (int r = 0; r < ny; ++r) g->push_back(rnn.cd_offset() + i * ny + r);
}

}  // namespace

std::vector<std::vector<int>> StateGroups(const StateSpaceRnn& rnn) {
  const int nx = rnn.spec().nx;
  std::vector<std::vector<int>> groups(nx);
  const Mlp::Layer& fx_first = rnn.fx().layers().front();
  const Mlp::Layer& fx_last = rnn.fx().layers().back();
  const Mlp::Layer& fy_first = rnn.fy().layers().front();
  for (int i = 0; i < nx; ++i) {
    std::vector<int>& g = groups[i];
    for (int r = 0; r < fx_first.out; ++r) {
      g.push_back(rnn.fx_offset() + fx_first.weight_offset + i * fx_first.out +
                  r);
    }
    for (int r = 0; r < fy_first.out; ++r) {
      g.push_back(rnn.fy_offset() + fy_first.weight_offset + i * fy_first.out +
                  r);
    }
    for (int c = 0; c < fx_last.in; ++c) {
      const int k =
          rnn.fx_offset() + fx_last.weight_offset + c * fx_last.out + i;
      // With no hidden layer the first and last fx layers coincide.
      if (std::find(g.begin(), g.end(), k) == g.end()) g.push_back(k);
    }
    g.push_back(rnn.fx_offset() + fx_last.bias_offset + i);
    if (rnn.spec().linear) AddLinearTerms(rnn, i, &g);
  }
  return groups;
}

double ModelOrder(const StateSpaceRnn& rnn, const Eigen::VectorXd& w) {
  int order = 0;
  for (const std::vector<int>& g : StateGroups(rnn)) {
    bool any = false;
    for (int i : g) any = any || w(i) != 0.0;
    order += any;
  }
  return order;
}

}  // namespace sparrow::core
