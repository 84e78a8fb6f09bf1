#include "core/util/eigen_blocking.h"

#include "Eigen/Core"

namespace sparrow::core {

void PinEigenBlocking() {
  Eigen::setCpuCacheSizes(kEigenBlockingL1Bytes, kEigenBlockingL2Bytes,
                          kEigenBlockingL3Bytes);
}

}  // namespace sparrow::core
