// Linked into every test binary (CMakeLists.txt): Eigen's products are blocked
// as in sparrow and sparrowd (core/util/eigen_blocking.h), so a test computes
// the numbers the binaries compute, on any CPU. Runs before main, while the
// process has one thread.
#include "core/util/eigen_blocking.h"

namespace {

[[maybe_unused]] const bool kEigenBlockingPinned =
    (sparrow::core::PinEigenBlocking(), true);

}  // namespace
