// "Did you mean ...?" for a command line CLI11 refused: an unknown subcommand
// ("sparrow trian" -> run) or an unknown flag ("run --seed" -> --seeds).
#ifndef SPARROW_CLIENT_CLI_USAGE_HINT_H_
#define SPARROW_CLIENT_CLI_USAGE_HINT_H_

#include <string>

#include "CLI/CLI.hpp"

namespace sparrow::cli {

// The first unknown subcommand or flag on the command line, as a message
// naming the closest known one (or listing them); "" when the words are all
// known (the error is of another kind, and CLI11's message says it).
std::string UsageHint(CLI::App& app, int argc, const char* const* argv);

}  // namespace sparrow::cli

#endif  // SPARROW_CLIENT_CLI_USAGE_HINT_H_
