// SHA-256 of a byte string as lowercase hex (OpenSSL's libcrypto): dataset ids
// are content hashes, computed by the client before an upload and checked by
// the server after it.
#ifndef SPARROW_SERVER_SPEC_SHA256_H_
#define SPARROW_SERVER_SPEC_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace sparrow::spec {

std::string Sha256Hex(absl::string_view bytes);

}  // namespace sparrow::spec

#endif  // SPARROW_SERVER_SPEC_SHA256_H_
