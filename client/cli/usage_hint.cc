#include "client/cli/usage_hint.h"

#include <map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "translate/suggest.h"

namespace sparrow::cli {
namespace {

// Words from other tools that mean one of ours.
const std::map<std::string, std::string>& Aliases() {
  static const auto* aliases = new std::map<std::string, std::string>{
      {"train", "run"},    {"fit", "run"},     {"start", "submit"},
      {"ls", "list"},      {"ps", "list"},     {"jobs", "list"},
      {"kill", "cancel"},  {"stop", "cancel"}, {"logs", "watch"},
      {"infer", "predict"}};
  return *aliases;
}

std::vector<const CLI::App*> AllSubcommands(const CLI::App& app) {
  return app.get_subcommands([](const CLI::App*) { return true; });
}

// "sparrow model get" (the root's own name is argv[0], a path).
std::string CommandName(const CLI::App& app) {
  if (app.get_parent() == nullptr) return "sparrow";
  return absl::StrCat(CommandName(*app.get_parent()), " ", app.get_name());
}

std::string UnknownSubcommand(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  for (const CLI::App* sub : AllSubcommands(app)) {
    names.push_back(sub->get_name());
  }
  std::string guess = translate::ClosestName(word, names);
  if (guess.empty()) {
    std::vector<std::string> aliases;
    for (const auto& [alias, name] : Aliases()) aliases.push_back(alias);
    const std::string alias = translate::ClosestName(word, aliases);
    if (!alias.empty()) guess = Aliases().at(alias);
  }
  std::string hint = absl::StrCat("unknown subcommand '", word, "'");
  if (!guess.empty())
    return absl::StrCat(hint, "; did you mean '", guess, "'?");
  return absl::StrCat(hint, "; ", CommandName(app), " has ",
                      absl::StrJoin(names, ", "));
}

std::string UnknownFlag(const CLI::App& app, const std::string& flag) {
  std::vector<std::string> names = {"--help"};
  for (const CLI::Option* opt :
       app.get_options([](const CLI::Option*) { return true; })) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  const std::string guess = translate::ClosestName(flag, names);
  std::string hint =
      absl::StrCat("unknown flag '", flag, "' for '", CommandName(app), "'");
  if (!guess.empty())
    return absl::StrCat(hint, "; did you mean '", guess, "'?");
  return absl::StrCat(hint, "; it takes ", absl::StrJoin(names, ", "));
}

}  // namespace

std::string UsageHint(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* cur = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return "";
    if (absl::StartsWith(arg, "-")) {
      const std::string name = arg.substr(0, arg.find('='));
      const CLI::Option* opt = cur->get_option_no_throw(name);
      if (opt == nullptr) return UnknownFlag(*cur, name);
      // Skip the option's value ("--seeds 3"), unless given as "--seeds=3".
      if (opt->get_expected_max() > 0 && arg.find('=') == std::string::npos &&
          opt->get_type_size() > 0) {
        ++i;
      }
      continue;
    }
    const std::vector<CLI::App*> named =
        cur->get_subcommands([&](CLI::App* s) { return s->check_name(arg); });
    if (!named.empty()) {
      cur = named.front();
      continue;
    }
    // A word that is no subcommand: a positional argument if the command
    // takes one, else a misspelt subcommand.
    const CLI::App& c = *cur;
    const bool takes_positionals = !c.get_options([](const CLI::Option* o) {
                                       return o->get_positional();
                                     }).empty();
    if (!takes_positionals && !AllSubcommands(c).empty()) {
      return UnknownSubcommand(*cur, arg);
    }
  }
  return "";
}

}  // namespace sparrow::cli
