#include "server/http/proto_json.h"

#include <cmath>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/time_util.h"
#include "server/http/event_text.h"

namespace sparrow::server::http {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

nlohmann::json Number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// One value of a field; `index` < 0 for a singular field.
nlohmann::json Value(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return Number(rep ? r->GetRepeatedDouble(m, f, index)
                        : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return Number(rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_STRING:
      return rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return (rep ? r->GetRepeatedEnum(m, f, index) : r->GetEnum(m, f))->name();
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ProtoJson(rep ? r->GetRepeatedMessage(m, f, index)
                           : r->GetMessage(m, f));
  }
  return nullptr;
}

nlohmann::json MapJson(const Message& m, const FieldDescriptor* f) {
  nlohmann::json out = nlohmann::json::object();
  const Reflection* r = m.GetReflection();
  for (int i = 0; i < r->FieldSize(m, f); ++i) {
    const Message& entry = r->GetRepeatedMessage(m, f, i);
    const auto* d = entry.GetDescriptor();
    const nlohmann::json key = Value(entry, d->field(0), -1);
    out[key.is_string() ? key.get<std::string>() : key.dump()] =
        Value(entry, d->field(1), -1);
  }
  return out;
}

}  // namespace

nlohmann::json TimeJson(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return nullptr;
  return FormatTime(
      google::protobuf::util::TimeUtil::TimestampToNanoseconds(t));
}

nlohmann::json ProtoJson(const Message& m) {
  if (m.GetDescriptor()->full_name() == "google.protobuf.Timestamp") {
    return TimeJson(static_cast<const google::protobuf::Timestamp&>(m));
  }
  nlohmann::json out = nlohmann::json::object();
  const auto* d = m.GetDescriptor();
  const Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_map()) {
      out[f->name()] = MapJson(m, f);
    } else if (f->is_repeated()) {
      nlohmann::json list = nlohmann::json::array();
      for (int k = 0; k < r->FieldSize(m, f); ++k) {
        list.push_back(Value(m, f, k));
      }
      out[f->name()] = std::move(list);
    } else if (f->containing_oneof() != nullptr || f->has_presence()) {
      // Oneof members and optional fields only when set.
      if (r->HasField(m, f)) out[f->name()] = Value(m, f, -1);
    } else {
      out[f->name()] = Value(m, f, -1);
    }
  }
  return out;
}

std::string OneofName(const Message& m) {
  const auto* d = m.GetDescriptor();
  if (d->oneof_decl_count() == 0) return "";
  const FieldDescriptor* f =
      m.GetReflection()->GetOneofFieldDescriptor(m, d->oneof_decl(0));
  return f == nullptr ? "" : f->name();
}

}  // namespace sparrow::server::http
