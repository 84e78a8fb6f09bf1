#include "translate/malloc_arenas.h"

#include <cstdlib>  // defines __GLIBC__ under glibc; getenv
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sparrow::translate {

bool UseOneMallocArena() {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
  // An operator's own choice (MALLOC_ARENA_MAX, or GLIBC_TUNABLES with
  // glibc.malloc.arena_max) stands.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr ||
      (tunables != nullptr && std::string_view(tunables).find("arena_max") !=
                                  std::string_view::npos)) {
    return false;
  }
  return mallopt(M_ARENA_MAX, 1) == 1;
#else
  return false;
#endif
}

}  // namespace sparrow::translate
