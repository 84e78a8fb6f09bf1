#include "translate/json_shape.h"

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "translate/suggest.h"

namespace sparrow::translate {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
// ordered_json keeps the file's key order: the first problem reported is the
// first one in the file.
using Json = nlohmann::ordered_json;

std::string JsonTypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return absl::StrCat("the string ", v.dump());
    case Json::value_t::boolean:
      return absl::StrCat("the boolean ", v.dump());
    case Json::value_t::null:
      return "null";
    default:
      return absl::StrCat("the number ", v.dump());
  }
}

std::string Join(const std::string& path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

const FieldDescriptor* FindField(const Descriptor& type,
                                 const std::string& key) {
  if (const FieldDescriptor* f = type.FindFieldByName(key)) return f;
  for (int i = 0; i < type.field_count(); ++i) {
    if (type.field(i)->json_name() == key) return type.field(i);
  }
  return nullptr;
}

class Checker {
 public:
  explicit Checker(absl::string_view what) : what_(what) {}

  absl::Status Message(const Json& v, const Descriptor& type,
                       const std::string& path) {
    if (!v.is_object()) {
      return Error(path,
                   absl::StrCat("expected an object {...} (", type.full_name(),
                                "), got ", JsonTypeName(v)));
    }
    std::set<const FieldDescriptor*> seen;
    for (const auto& [key, value] : v.items()) {
      const FieldDescriptor* field = FindField(type, key);
      if (field == nullptr) return UnknownField(type, key, path);
      if (!seen.insert(field).second) {
        return Error(Join(path, field->name()),
                     "given twice (in snake_case and in lowerCamelCase); keep "
                     "one");
      }
      if (value.is_null()) continue;
      if (absl::Status s = Field(value, *field, Join(path, key)); !s.ok()) {
        return s;
      }
    }
    return Oneofs(v, type, path);
  }

 private:
  absl::Status Error(const std::string& path, absl::string_view message) {
    return absl::InvalidArgumentError(absl::StrCat(
        what_, ": ", path.empty() ? "the top level" : path, ": ", message));
  }

  absl::Status UnknownField(const Descriptor& type, const std::string& key,
                            const std::string& path) {
    std::vector<std::string> names;
    for (int i = 0; i < type.field_count(); ++i) {
      names.push_back(type.field(i)->name());
    }
    const std::string guess = ClosestName(key, names);
    return Error(path.empty() ? key : Join(path, key),
                 guess.empty()
                     ? absl::StrCat("unknown field '", key, "'; the fields of ",
                                    type.full_name(), " are ",
                                    absl::StrJoin(names, ", "))
                     : absl::StrCat("unknown field '", key, "'; did you mean '",
                                    guess, "'?"));
  }

  // Two alternatives of one oneof (e.g. two optimizers) given together.
  absl::Status Oneofs(const Json& v, const Descriptor& type,
                      const std::string& path) {
    // Real oneofs only: proto3 `optional` fields have synthetic ones.
    for (int o = 0; o < type.real_oneof_decl_count(); ++o) {
      std::vector<std::string> set;
      for (const auto& [key, value] : v.items()) {
        const FieldDescriptor* f = FindField(type, key);
        if (!value.is_null() && f->containing_oneof() == type.oneof_decl(o)) {
          set.push_back(f->name());
        }
      }
      if (set.size() > 1) {
        return Error(path,
                     absl::StrCat("sets both '", set[0], "' and '", set[1],
                                  "', which are alternatives ", "(one of ",
                                  type.oneof_decl(o)->name(), "); keep one"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Field(const Json& v, const FieldDescriptor& field,
                     const std::string& path) {
    if (field.is_map()) {
      if (!v.is_object()) {
        return Error(path, absl::StrCat("expected an object {\"key\": ...}, "
                                        "got ",
                                        JsonTypeName(v)));
      }
      const FieldDescriptor& value = *field.message_type()->map_value();
      for (const auto& [key, item] : v.items()) {
        if (absl::Status s = Single(item, value, absl::StrCat(path, ".", key));
            !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    }
    if (!field.is_repeated()) return Single(v, field, path);
    if (!v.is_array()) {
      return Error(
          path, absl::StrCat(
                    "expected a list [...], got ", JsonTypeName(v),
                    v.is_primitive()
                        ? absl::StrCat("; write [", v.dump(), "] for one item")
                        : ""));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (absl::Status s = Single(v[i], field, absl::StrCat(path, "[", i, "]"));
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Single(const Json& v, const FieldDescriptor& field,
                      const std::string& path) {
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE:
        // Well-known types (Duration, Struct, ...) have JSON forms of their
        // own; protobuf's parser checks those.
        if (absl::StartsWith(field.message_type()->full_name(),
                             "google.protobuf.")) {
          return absl::OkStatus();
        }
        return Message(v, *field.message_type(), path);
      case FieldDescriptor::CPPTYPE_ENUM:
        return Enum(v, *field.enum_type(), path);
      case FieldDescriptor::CPPTYPE_STRING:
        if (v.is_string()) return absl::OkStatus();
        return Error(path,
                     absl::StrCat("expected a string, got ", JsonTypeName(v)));
      case FieldDescriptor::CPPTYPE_BOOL:
        if (v.is_boolean()) return absl::OkStatus();
        return Error(path, absl::StrCat("expected true or false, got ",
                                        JsonTypeName(v)));
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT64:
        if (v.is_number() || v.is_string()) return absl::OkStatus();
        return Error(
            path, absl::StrCat("expected an integer, got ", JsonTypeName(v)));
      case FieldDescriptor::CPPTYPE_FLOAT:
      case FieldDescriptor::CPPTYPE_DOUBLE:
        // The protobuf JSON mapping's only way to write these values (the
        // spec's checks then refuse them where a finite value is needed).
        if (v.is_string() &&
            (v == "NaN" || v == "Infinity" || v == "-Infinity")) {
          return absl::OkStatus();
        }
        [[fallthrough]];
      default:  // and 32-bit integers
        if (v.is_number()) return absl::OkStatus();
        return Error(
            path,
            absl::StrCat("expected a number, got ", JsonTypeName(v),
                         v.is_string() ? "; write it without quotes" : ""));
    }
  }

  absl::Status Enum(const Json& v, const EnumDescriptor& type,
                    const std::string& path) {
    if (v.is_number_integer()) {
      const int64_t number = v.get<int64_t>();
      if (number >= INT32_MIN && number <= INT32_MAX &&
          type.FindValueByNumber(static_cast<int>(number))) {
        return absl::OkStatus();
      }
    }
    std::vector<std::string> names;
    for (int i = 0; i < type.value_count(); ++i) {
      names.push_back(type.value(i)->name());
    }
    if (!v.is_string()) {
      return Error(path,
                   absl::StrCat("expected one of ", absl::StrJoin(names, ", "),
                                "; got ", JsonTypeName(v)));
    }
    const std::string given = v.get<std::string>();
    if (type.FindValueByName(given)) return absl::OkStatus();
    const std::string guess = GuessEnum(given, type, names);
    return Error(path, absl::StrCat(v.dump(), " is not a valid ", type.name(),
                                    guess.empty() ? "" : "; use \"", guess,
                                    guess.empty() ? "" : "\"", " (valid: ",
                                    absl::StrJoin(names, ", "), ")"));
  }

  // "tanh" -> ACTIVATION_TANH: the value named by the type's prefix (that of
  // its *_UNSPECIFIED value) and `given`; else the one value ending in
  // "_<given>"; else the closest full name.
  static std::string GuessEnum(const std::string& given,
                               const EnumDescriptor& type,
                               const std::vector<std::string>& names) {
    std::string prefix;
    for (const std::string& name : names) {
      if (absl::EndsWith(name, "_UNSPECIFIED")) {
        prefix =
            name.substr(0, name.size() - std::string("UNSPECIFIED").size());
      }
    }
    const std::string upper = absl::AsciiStrToUpper(given);
    if (!prefix.empty() && type.FindValueByName(prefix + upper)) {
      return prefix + upper;
    }
    std::vector<std::string> suffixed;  // "cross_entropy": one value ends so
    for (const std::string& name : names) {
      if (absl::EndsWith(name, "_" + upper)) suffixed.push_back(name);
    }
    if (suffixed.size() == 1) return suffixed[0];
    return ClosestName(given, names);
  }

  std::string what_;
};

// Finds the first name given twice in one object while nlohmann's parser
// reads the text (nlohmann, like protobuf's parser, keeps the last value and
// says nothing). Its path is the chain of object keys above it ("seed",
// "optimizer.adam.learning_rate"); list indices are not tracked.
class DuplicateKeys {
 public:
  bool operator()(int /*depth*/, nlohmann::detail::parse_event_t event,
                  Json& parsed) {
    using Event = nlohmann::detail::parse_event_t;
    if (event == Event::object_start) {
      objects_.emplace_back();
    } else if (event == Event::object_end && !objects_.empty()) {
      objects_.pop_back();
    } else if (event == Event::key && !objects_.empty()) {
      Object& o = objects_.back();
      o.key = parsed.get<std::string>();
      if (!o.keys.insert(o.key).second && found_.empty()) found_ = Path();
    }
    return true;
  }
  // The path of the first duplicate, or empty.
  const std::string& found() const { return found_; }

 private:
  struct Object {
    std::set<std::string> keys;
    std::string key;  // the key whose value is being read
  };
  std::string Path() const {
    std::vector<std::string> keys;
    for (const Object& o : objects_) keys.push_back(o.key);
    return absl::StrJoin(keys, ".");
  }
  std::vector<Object> objects_;
  std::string found_;
};

}  // namespace

absl::Status CheckJsonShape(absl::string_view json,
                            const google::protobuf::Descriptor& type,
                            absl::string_view what) {
  Json v;
  DuplicateKeys duplicates;
  try {
    v = Json::parse(json.begin(), json.end(), std::ref(duplicates));
  } catch (const Json::exception& e) {
    // A syntax error (parse_error) or a number beyond a double (out_of_range).
    // e.what() is "[json.exception.parse_error.101] parse error at line L,
    // column C: ..."; keep what follows the bracket.
    absl::string_view message = e.what();
    if (const size_t at = message.find("] "); at != absl::string_view::npos) {
      message.remove_prefix(at + 2);
    }
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is not valid JSON: ", message,
        " (strict JSON: no trailing commas, no comments, strings in double "
        "quotes)"));
  }
  if (!duplicates.found().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", duplicates.found(),
        ": the field is given twice in the same object; give it once (JSON "
        "parsers keep either value, so the spec would be ambiguous)"));
  }
  return Checker(what).Message(v, type, "");
}

}  // namespace sparrow::translate
