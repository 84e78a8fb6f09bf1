#include "translate/metrics.h"

namespace sparrow::translate {

v1::Metrics ToProto(const core::Metrics& k) {
  v1::Metrics pm;
  pm.set_train_rmse(k.train_rmse);
  pm.set_validation_rmse(k.validation_rmse);
  pm.set_test_rmse(k.test_rmse);
  pm.set_train_bfr(k.train_bfr);
  pm.set_validation_bfr(k.validation_bfr);
  pm.set_test_bfr(k.test_bfr);
  pm.set_train_accuracy(k.train_accuracy);
  pm.set_validation_accuracy(k.validation_accuracy);
  pm.set_test_accuracy(k.test_accuracy);
  pm.set_train_one_step_rmse(k.train_one_step_rmse);
  pm.set_validation_one_step_rmse(k.validation_one_step_rmse);
  pm.set_test_one_step_rmse(k.test_one_step_rmse);
  pm.set_sparsity_pct(k.sparsity_pct);
  pm.set_remaining_pct(k.remaining_pct);
  pm.set_model_order(k.model_order);
  pm.set_linear_train_rmse(k.linear_train_rmse);
  pm.set_linear_validation_rmse(k.linear_validation_rmse);
  pm.set_linear_test_rmse(k.linear_test_rmse);
  pm.set_linear_train_bfr(k.linear_train_bfr);
  pm.set_linear_validation_bfr(k.linear_validation_bfr);
  pm.set_linear_test_bfr(k.linear_test_bfr);
  for (const core::LayerSparsity& l : k.layers) {
    v1::LayerSparsity* pl = pm.add_layers();
    pl->set_neurons(l.neurons);
    pl->set_inputs(l.inputs);
    pl->set_zeros(l.zeros);
    pl->set_zero_pct(l.zero_pct);
    pl->set_remaining_pct(l.remaining_pct);
  }
  for (const std::string& r : k.removed) pm.add_removed(r);
  return pm;
}

}  // namespace sparrow::translate
