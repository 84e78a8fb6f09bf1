#include "core/util/eigen_blocking.h"

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "Eigen/Core"
#include "gtest/gtest.h"

namespace sparrow::core {
namespace {

// The cache sizes of the CPUs whose products should agree: (L1, L2, L3).
struct Cpu {
  std::ptrdiff_t l1, l2, l3;
};
constexpr Cpu kSmallL1{32 * 1024, 1024 * 1024, 32 * 1024 * 1024};
constexpr Cpu kLargeL1{48 * 1024, 1024 * 1024, 508 * 1024 * 1024};
constexpr Cpu kOthers[] = {kSmallL1,
                           kLargeL1,
                           {48 * 1024, 2 << 20, 30 << 20},
                           {64 * 1024, 512 * 1024, 0},
                           {16 * 1024, 256 << 10, 8 << 20}};

// The products training forms: a weight gradient summed over a long record
// (4 x 2000 times 2000 x 5, deeper than any kc), a minibatch product and a
// square one, with Eigen's blocking set for `cpu` (then pinned if `pin`).
std::vector<Eigen::MatrixXd> Products(const Cpu& cpu, bool pin) {
  Eigen::setCpuCacheSizes(cpu.l1, cpu.l2, cpu.l3);
  if (pin) PinEigenBlocking();
  std::srand(7);  // Eigen's Random draws from std::rand
  const Eigen::MatrixXd delta = Eigen::MatrixXd::Random(4, 2000);
  const Eigen::MatrixXd z = Eigen::MatrixXd::Random(5, 2000);
  const Eigen::MatrixXd x = Eigen::MatrixXd::Random(785, 128);
  const Eigen::MatrixXd w = Eigen::MatrixXd::Random(512, 785);
  const Eigen::MatrixXd a = Eigen::MatrixXd::Random(300, 300);
  std::vector<Eigen::MatrixXd> out;
  out.push_back(delta * z.transpose());
  out.push_back(w * x);
  out.push_back(a * a);
  return out;
}

bool BitEqual(const std::vector<Eigen::MatrixXd>& a,
              const std::vector<Eigen::MatrixXd>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i].array() != b[i].array()).any()) return false;
  }
  return true;
}

class EigenBlockingTest : public ::testing::Test {
 protected:
  // The process stays pinned for the tests after this one.
  void TearDown() override { PinEigenBlocking(); }
};

TEST_F(EigenBlockingTest, PinsTheCacheSizesEigenBlocksFor) {
  Eigen::setCpuCacheSizes(kLargeL1.l1, kLargeL1.l2, kLargeL1.l3);
  PinEigenBlocking();
  EXPECT_EQ(Eigen::l1CacheSize(), kEigenBlockingL1Bytes);
  EXPECT_EQ(Eigen::l2CacheSize(), kEigenBlockingL2Bytes);
  EXPECT_EQ(Eigen::l3CacheSize(), kEigenBlockingL3Bytes);
}

// The reason for the pin: unpinned, a 32 KiB and a 48 KiB L1 sum the deep
// product in other orders, and its last bits differ.
TEST_F(EigenBlockingTest, UnpinnedProductsDependOnTheL1Size) {
  EXPECT_FALSE(BitEqual(Products(kSmallL1, false), Products(kLargeL1, false)));
}

TEST_F(EigenBlockingTest, PinnedProductsAreTheSameOnEveryCpu) {
  const std::vector<Eigen::MatrixXd> reference = Products(kOthers[0], true);
  for (const Cpu& cpu : kOthers) {
    EXPECT_TRUE(BitEqual(Products(cpu, true), reference))
        << "L1 " << cpu.l1 << ", L2 " << cpu.l2 << ", L3 " << cpu.l3;
  }
}

}  // namespace
}  // namespace sparrow::core
