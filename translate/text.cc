#include "translate/text.h"

#include <cstdint>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace sparrow::translate {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at the start of `s`, or 0 when it
// does not start with one (RFC 3629, table 3-7 of the Unicode standard).
size_t SequenceLength(absl::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const auto in = [&](size_t i, uint8_t lo, uint8_t hi) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const uint8_t lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    const uint8_t hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogates
    return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const uint8_t lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    const uint8_t hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
    return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

absl::Status CheckField(const Message& message, const FieldDescriptor* field,
                        const std::string& path);

absl::Status CheckMessage(const Message& message, const std::string& prefix) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path = prefix.empty()
                                 ? field->name()
                                 : absl::StrCat(prefix, ".", field->name());
    if (absl::Status s = CheckField(message, field, path); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CheckField(const Message& message, const FieldDescriptor* field,
                        const std::string& path) {
  const bool text = field->type() == FieldDescriptor::TYPE_STRING;
  const bool nested = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
  if (!text && !nested) return absl::OkStatus();
  const Reflection* reflection = message.GetReflection();
  const int n =
      field->is_repeated() ? reflection->FieldSize(message, field) : 1;
  for (int i = 0; i < n; ++i) {
    const std::string at =
        field->is_repeated() ? absl::StrCat(path, "[", i, "]") : path;
    absl::Status s;
    if (text) {
      std::string scratch;
      s = CheckUtf8(
          field->is_repeated()
              ? reflection->GetRepeatedStringReference(message, field, i,
                                                       &scratch)
              : reflection->GetStringReference(message, field, &scratch),
          at);
    } else {
      s = CheckMessage(field->is_repeated()
                           ? reflection->GetRepeatedMessage(message, field, i)
                           : reflection->GetMessage(message, field),
                       at);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  while (!text.empty()) {
    const size_t n = SequenceLength(text);
    if (n == 0) return false;
    text.remove_prefix(n);
  }
  return true;
}

absl::Status CheckUtf8(absl::string_view text, absl::string_view what) {
  if (IsValidUtf8(text)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " is not valid UTF-8 (\"", absl::CHexEscape(text.substr(0, 64)),
      text.size() > 64 ? "…" : "", "\"); names and other text must be UTF-8"));
}

absl::Status CheckUtf8Fields(const google::protobuf::Message& message,
                             absl::string_view prefix) {
  return CheckMessage(message, std::string(prefix));
}

std::string ToValidUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t n = SequenceLength(text);
    if (n == 0) {
      out += kReplacement;
      text.remove_prefix(1);
    } else {
      out.append(text.data(), n);
      text.remove_prefix(n);
    }
  }
  return out;
}

std::string ForMessage(absl::string_view text, size_t max_chars) {
  size_t end = 0;
  for (size_t chars = 0; end < text.size() && chars < max_chars; ++chars) {
    const size_t n = SequenceLength(text.substr(end));
    end += n == 0 ? 1 : n;
  }
  std::string out = ToValidUtf8(text.substr(0, end));
  if (end < text.size()) {
    absl::StrAppend(&out, "… (", text.size() - end, " more bytes)");
  }
  return out;
}

}  // namespace sparrow::translate
