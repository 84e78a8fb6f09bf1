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
  // Other tools' words: exactly, or with a typo from five letters on ("trian"
  // is "train"; "stat" is no "start").
  std::vector<std::string> aliases;
  for (const auto& [alias, name] : Aliases()) aliases.push_back(alias);
  const std::string alias = word.size() >= 5
                                ? translate::ClosestName(word, aliases)
                                : (Aliases().count(word) > 0 ? word : "");
  if (guess.empty() && !alias.empty()) guess = Aliases().at(alias);
  std::string hint = absl::StrCat("unknown subcommand '", word, "'");
  if (!guess.empty())
    return absl::StrCat(hint, "; did you mean '", guess, "'?");
  return absl::StrCat(hint, "; ", CommandName(app), " has ",
                      absl::StrJoin(names, ", "));
}

// The flag names of `app` ("--seeds", "-o", "--help", ...).
std::vector<std::string> FlagNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt :
       app.get_options([](const CLI::Option*) { return true; })) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// The closest long flag, compared without dashes; none for one- or
// two-letter words, where any letter is one edit from "-h".
std::string ClosestFlag(const std::string& flag,
                        const std::vector<std::string>& names) {
  const size_t start = flag.find_first_not_of('-');  // npos for "-", "---"
  if (start == std::string::npos || flag.size() - start <= 2) return "";
  const std::string word = flag.substr(start);
  std::vector<std::string> bare;
  for (const std::string& n : names) bare.push_back(n.substr(2));
  const std::string guess = translate::ClosestName(word, bare);
  return guess.empty() ? "" : "--" + guess;
}

// The subcommand under `app` (at any depth) named `name` and having `flag`,
// or, for an empty name, the first with `flag`; null if none.
const CLI::App* OwnerOfFlag(const CLI::App& app, const std::string& flag,
                            const std::string& name) {
  for (const CLI::App* sub : AllSubcommands(app)) {
    if ((name.empty() || sub->check_name(name)) &&
        sub->get_option_no_throw(flag) != nullptr) {
      return sub;
    }
    if (const CLI::App* deeper = OwnerOfFlag(*sub, flag, name)) return deeper;
  }
  return nullptr;
}

// `later` are the words after the flag: a subcommand there that takes the
// flag is where it belongs ("sparrow --server H health").
std::string UnknownFlag(const CLI::App& app, const std::string& flag,
                        const std::vector<std::string>& later) {
  std::string hint =
      absl::StrCat("unknown flag '", flag, "' for '", CommandName(app), "'");
  const CLI::App* owner = nullptr;
  for (const std::string& word : later) {
    if (owner == nullptr) owner = OwnerOfFlag(app, flag, word);
  }
  if (owner == nullptr) owner = OwnerOfFlag(app, flag, "");
  if (owner != nullptr) {
    return absl::StrCat(hint, "; it belongs to '", CommandName(*owner),
                        "': put it after the subcommand");
  }
  const std::vector<std::string> names = FlagNames(app);
  std::vector<std::string> long_names;
  for (const std::string& n : names) {
    if (absl::StartsWith(n, "--")) long_names.push_back(n);
  }
  const std::string guess = ClosestFlag(flag, long_names);
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
      // "--seeds=3" -> "--seeds"; "-omodel.json" -> "-o".
      const std::string name = absl::StartsWith(arg, "--")
                                   ? arg.substr(0, arg.find('='))
                                   : arg.substr(0, 2);
      const CLI::Option* opt = cur->get_option_no_throw(name);
      if (opt == nullptr) {
        return UnknownFlag(*cur, name,
                           std::vector<std::string>(argv + i + 1, argv + argc));
      }
      // Skip the option's value ("--seeds 3"), unless it came in the same
      // word ("--seeds=3", "-omodel.json").
      const bool value_attached = arg.size() > name.size();
      if (opt->get_expected_max() > 0 && !value_attached &&
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
