// One malloc arena for the whole process, set first thing in main() by both
// sparrow and sparrowd (and its job workers).
//
// Why: Eigen's matrix products take their packing buffers from malloc on
// every call (about 0.5 MB for an LSTM step's recurrent product), and with
// glibc's per-thread arenas a training thread whose 64 MB arena heap is full
// gets a fresh heap mapped for each such buffer and unmapped again when it is
// freed: thousands of mmap / munmap pairs and page faults per epoch. On a
// Fashion-MNIST LSTM epoch that made the RLS run 1.2 to 1.6 times as slow as
// the Adam one, varying from run to run with the heap layout; with one arena
// the two take the same time (bench/README.md, "RLS against Adam"). Small
// allocations stay lock-free in glibc's per-thread caches, so one arena costs
// the service's other threads nothing measurable.
#ifndef SPARROW_TRANSLATE_MALLOC_ARENAS_H_
#define SPARROW_TRANSLATE_MALLOC_ARENAS_H_

namespace sparrow::translate {

// Limits glibc malloc to its main arena. Call before any thread starts. A no-op
// (returning false) without glibc, when a sanitizer supplies malloc, or when
// the environment sets the arena count (MALLOC_ARENA_MAX, or arena_max in
// GLIBC_TUNABLES).
bool UseOneMallocArena();

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_MALLOC_ARENAS_H_
