// Prometheus metrics of sparrowd (prometheus-cpp): queue depth, running jobs,
// job durations by final state, RPCs and errors by method and code. Served on
// /metrics by an Exposer when sparrowd has --metrics-listen.
#ifndef SPARROW_SERVER_METRICS_H_
#define SPARROW_SERVER_METRICS_H_

#include <memory>
#include <string>

#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace sparrow::server {

class ServerMetrics {
 public:
  ServerMetrics();

  void SetQueueDepth(double n) { queue_depth_->Set(n); }
  void SetRunningJobs(double n) { running_jobs_->Set(n); }
  // A job ended (state: "succeeded", "failed", "cancelled") after `seconds`
  // of wall time in this attempt.
  void ObserveJobEnd(const std::string& state, double seconds);
  // One finished RPC.
  void CountRpc(const std::string& method, grpc::StatusCode code);
  void CountEvents(double n) { events_->Increment(n); }

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* queue_depth_;
  prometheus::Gauge* running_jobs_;
  prometheus::Counter* events_;
  prometheus::Family<prometheus::Histogram>* job_seconds_;
  prometheus::Family<prometheus::Counter>* rpcs_;
};

}  // namespace sparrow::server

#endif  // SPARROW_SERVER_METRICS_H_
