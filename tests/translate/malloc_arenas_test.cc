// One malloc arena: threads started after UseOneMallocArena() allocate from
// the main arena instead of creating arenas (and 64 MB heaps) of their own.
#include "translate/malloc_arenas.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sparrow::translate {
namespace {

#if defined(__GLIBC__)
// The number of arenas glibc reports (one <heap nr="..."> each).
int ArenaCount() {
  char* buf = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buf, &size);
  malloc_info(0, out);
  std::fclose(out);
  const std::string xml(buf, size);
  std::free(buf);
  int count = 0;
  for (size_t at = xml.find("<heap nr="); at != std::string::npos;
       at = xml.find("<heap nr=", at + 1)) {
    ++count;
  }
  return count;
}
#endif

TEST(MallocArenasTest, ThreadsShareTheMainArena) {
  if (!UseOneMallocArena()) {
    GTEST_SKIP() << "not glibc's malloc (a sanitizer build or another libc), "
                    "or the environment sets the arena count";
  }
#if defined(__GLIBC__)
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([] {
      // Large enough to bypass the per-thread cache, small enough not to be
      // mapped on its own: served by an arena.
      std::vector<char*> blocks;
      for (int i = 0; i < 8; ++i) {
        blocks.push_back(static_cast<char*>(std::malloc(64 << 10)));
        blocks.back()[0] = 1;
      }
      for (char* b : blocks) std::free(b);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ArenaCount(), 1);
#endif
}

}  // namespace
}  // namespace sparrow::translate
