// The dashboard's static files (web/src and the bundled uPlot), compiled into
// sparrowd by scripts/embed_assets.py at build time.
#ifndef SPARROW_SERVER_HTTP_ASSETS_H_
#define SPARROW_SERVER_HTTP_ASSETS_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace sparrow::server::http {

struct Asset {
  const char* path;  // "/app.js"
  const char* content_type;
  const unsigned char* data;
  size_t size;
};

// The asset served at `path`, or null.
const Asset* FindAsset(absl::string_view path);

}  // namespace sparrow::server::http

#endif  // SPARROW_SERVER_HTTP_ASSETS_H_
