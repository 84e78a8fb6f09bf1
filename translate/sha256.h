// SHA-256 of a byte string as lowercase hex (OpenSSL's libcrypto): dataset ids
// are content hashes, computed by the client before an upload and checked by
// the server after it. It lives in translate/, the library both sides link,
// because the client needs the very same id the server computes.
#ifndef SPARROW_TRANSLATE_SHA256_H_
#define SPARROW_TRANSLATE_SHA256_H_

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

struct evp_md_ctx_st;

namespace sparrow::translate {

std::string Sha256Hex(absl::string_view bytes);

// The same hash over bytes that arrive in pieces (an upload's chunks).
// Not thread-safe; movable.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void Update(absl::string_view bytes);
  // The lowercase hex digest of everything added; ends the hash (a new
  // Sha256 is needed for more).
  std::string FinishHex();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

}  // namespace sparrow::translate

#endif  // SPARROW_TRANSLATE_SHA256_H_
