// `sparrow run --local`: reads a spec and its data, trains it in this process
// (every trial of its sweep, JobSpec.sweep, in parallel), prints the results
// and writes the chosen trial's model.
#ifndef SPARROW_CLIENT_CLI_LOCAL_RUN_H_
#define SPARROW_CLIENT_CLI_LOCAL_RUN_H_

#include <string>

namespace sparrow::cli {

struct RunFlags {
  bool local = false;
  std::string spec_path;
  int seeds = 1;  // > 1: the spec's sweep.seeds (the spec must not set it)
  int threads = 0;
  bool json = false;
  std::string model_out;
  // > 0: the memory (GiB) the run may need by its estimate; 0: what this
  // process may use (local_memory.h).
  double max_memory_gib = 0;
};

// The process exit code (common.h).
int RunLocal(const RunFlags& flags);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_LOCAL_RUN_H_
