// The headers most of sparrow_server's sources include, directly or through
// the services' headers: compiled once per build directory into a precompiled
// header (CMakeLists.txt) instead of parsed once per file. Side by side on the
// 2-core machine (2026-11-30), eight server files compiled in 0.75 of their
// time without it. Only what changes rarely belongs here: a change to any of
// these files rebuilds every server source.
#ifndef SPARROW_SERVER_PRECOMPILED_H_
#define SPARROW_SERVER_PRECOMPILED_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "sparrow/v1/checkpoint.pb.h"
#include "sparrow/v1/datasets.grpc.pb.h"
#include "sparrow/v1/jobs.grpc.pb.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/model_service.grpc.pb.h"
#include "sparrow/v1/spec.pb.h"
#include "sparrow/v1/worker.pb.h"
#include "spdlog/spdlog.h"

#endif  // SPARROW_SERVER_PRECOMPILED_H_
