#include "server/spec/sha256.h"

#include "absl/strings/str_format.h"
#include "openssl/evp.h"

namespace sparrow::spec {

std::string Sha256Hex(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    absl::StrAppendFormat(&hex, "%02x", digest[i]);
  }
  return hex;
}

}  // namespace sparrow::spec
