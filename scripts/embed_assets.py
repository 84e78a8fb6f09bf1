#!/usr/bin/env python3
"""Writes a C++ source that holds the dashboard's files (server/http/assets.h).

Usage: embed_assets.py OUT.cc URL_PATH=FILE [URL_PATH=FILE ...]
The bytes are written as integer arrays (no string-literal length limits);
the content type follows the file's extension.
"""
import os
import sys

TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}


def main(argv):
    out_path, pairs = argv[1], [a.split("=", 1) for a in argv[2:]]
    lines = ['#include "server/http/assets.h"', "", "namespace sparrow::server::http {",
             "namespace {", ""]
    table = []
    for i, (url, path) in enumerate(sorted(pairs)):
        data = open(path, "rb").read()
        ctype = TYPES.get(os.path.splitext(path)[1], "application/octet-stream")
        body = ",".join(str(b) for b in data) or "0"
        lines.append(f"const unsigned char kData{i}[] = {{{body}}};")
        table.append(f'    {{"{url}", "{ctype}", kData{i}, {len(data)}}},')
    lines += ["", "const Asset kAssets[] = {"] + table + [
        '    {nullptr, nullptr, nullptr, 0},', "};", "", "}  // namespace", "",
        "const Asset* FindAsset(absl::string_view path) {",
        "  for (const Asset* a = kAssets; a->path != nullptr; ++a) {",
        "    if (path == a->path) return a;", "  }", "  return nullptr;", "}", "",
        "}  // namespace sparrow::server::http", ""]
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines))
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main(sys.argv)
