#include "translate/malloc_arenas.h"

#include <cstdlib>  // defines __GLIBC__ under glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sparrow::translate {

bool UseOneMallocArena() {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
  return mallopt(M_ARENA_MAX, 1) == 1;
#else
  return false;
#endif
}

}  // namespace sparrow::translate
