// The headers that most test files parse: the standard library's common
// ones, GoogleTest and GoogleMock, Eigen, Abseil's status and string helpers,
// and the API's protobuf messages. CMakeLists.txt precompiles them once per
// build directory (target sparrow_test_pch) and every test binary reuses the
// result, which saves each test file about 3 s of parsing on the 2-core
// machine. Test files still include what they use; this list only has to be
// a common subset.
#ifndef SPARROW_TESTS_TESTING_PRECOMPILED_H_
#define SPARROW_TESTS_TESTING_PRECOMPILED_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "Eigen/Dense"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sparrow/v1/jobs.pb.h"
#include "sparrow/v1/model.pb.h"
#include "sparrow/v1/spec.pb.h"

#endif  // SPARROW_TESTS_TESTING_PRECOMPILED_H_
