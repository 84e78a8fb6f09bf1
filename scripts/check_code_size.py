#!/usr/bin/env python3
"""Reports functions and files of Sparrow's C++ code that are too long.

Scans the *.cc and *.h files under core/, server/, client/ and translate/
(folders that do not exist are skipped) and lists every function body longer
than --max-function lines and every file longer than --max-file lines. Exits 1
when it lists any, 0 otherwise.

A function is a top-level or class-member definition whose header ends in
`) [const] [noexcept] [override] [final] [-> T] {` (constructors with an
initializer list too); namespace, class, struct, enum and lambda bodies are
not functions, and a lambda counts as part of the function that holds it.
Braces inside strings, character literals and comments are ignored. The
length of a function is the number of lines from its header's `{` line to its
closing `}` line, both included.

Usage:
  scripts/check_code_size.py [--max-function N] [--max-file N]
                             [--exclude PATH]... [--report] [--root DIR]
"""

import argparse
import os
import re
import sys

DIRS = ("core", "server", "client", "translate")
EXTENSIONS = (".cc", ".h")

# Words that open a block which is not a function body.
_NON_FUNCTION = re.compile(
    r"\b(namespace|class|struct|union|enum)\b[^;()]*$|^\s*extern\s+\"C\"")
# Statements whose parenthesised head is followed by a block.
_CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else)\s*(\(.*)?$")
_FUNCTION_TAIL = re.compile(
    r"\)\s*(const\s*)?(&{1,2}\s*)?(noexcept(\s*\([^)]*\))?\s*)?"
    r"(override\s*|final\s*)*(->\s*[\w:<>,\s*&]+)?$")


def strip_code(text):
    """Returns text with comments, string and char literals blanked out.

    Newlines are kept so that line numbers still match the file.
    """
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (
                i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            paren = text.find("(", i + 2)
            delim = text[i + 2:paren]
            end = text.find(")" + delim + '"', paren)
            j = n if end < 0 else end + len(delim) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            # A digit separator (1'000'000) is not a char literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and \
                    i + 1 < n and text[i + 1].isalnum() and \
                    re.match(r"[0-9a-fA-F]", text[i - 1]):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c
                       if j - i >= 2 else text[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_preprocessor(code):
    """Blanks preprocessor lines (with their continuations)."""
    lines = code.split("\n")
    continued = False
    for k, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            lines[k] = ""
    return "\n".join(lines)


def is_function_header(head):
    """Whether the text before a `{` at namespace/class scope opens a function."""
    head = " ".join(head.split())
    if not head or _NON_FUNCTION.search(head):
        return False
    if head.endswith("=") or head.endswith(","):  # initializers, enumerators
        return False
    # A constructor's initializer list: `Foo::Foo(...) : a_(x), b_{y}`.
    init = re.search(r"\)\s*(noexcept\s*)?:\s*[\w:]+\s*[({]", head)
    if init and "?" not in head:
        return True
    if _CONTROL.search(head.split(";")[-1].strip()):
        return False
    return bool(_FUNCTION_TAIL.search(head)) and "(" in head


def find_functions(code):
    """Yields (name, first_line, last_line) of each function body in code."""
    stack = []  # one entry per open brace: True when it opens a function
    head_start = 0  # where the text leading to the next `{` begins
    line = 1
    function_depth = None  # stack depth of the function being measured
    start_line, name = 0, ""
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c in ";}":
            if c == "}" and stack:
                opened = stack.pop()
                if opened and function_depth == len(stack):
                    yield name, start_line, line
                    function_depth = None
            head_start = i + 1
        elif c == "{":
            is_function = False
            if function_depth is None and all(not f for f in stack):
                head = code[head_start:i]
                if is_function_header(head):
                    is_function = True
                    function_depth = len(stack)
                    start_line = line
                    m = re.search(r"([~\w:<>=!+\-*/\[\]]+)\s*\(", head)
                    name = m.group(1) if m else "?"
            stack.append(is_function)
            head_start = i + 1


def scan_file(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    code = strip_preprocessor(strip_code(text))
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    functions = [(name, first, last, last - first + 1)
                 for name, first, last in find_functions(code)]
    return lines, functions


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-function", type=int, default=100,
                        help="longest allowed function body, lines (100)")
    parser.add_argument("--max-file", type=int, default=700,
                        help="longest allowed file, lines (700)")
    parser.add_argument("--exclude", action="append", default=[],
                        help="a file (path from the root) not to check; repeatable")
    parser.add_argument("--report", action="store_true",
                        help="also list the 20 longest functions")
    parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."),
        help="the source tree (default: this script's parent folder)")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.root)
    excluded = {os.path.normpath(p) for p in args.exclude}

    problems, all_functions = [], []
    for top in DIRS:
        base = os.path.join(root, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for filename in sorted(filenames):
                if not filename.endswith(EXTENSIONS):
                    continue
                path = os.path.join(dirpath, filename)
                rel = os.path.relpath(path, root)
                lines, functions = scan_file(path)
                for name, first, _, length in functions:
                    all_functions.append((length, rel, first, name))
                if rel in excluded:
                    continue
                if lines > args.max_file:
                    problems.append(f"{rel}: file has {lines} lines "
                                    f"(limit {args.max_file})")
                for name, first, _, length in functions:
                    if length > args.max_function:
                        problems.append(
                            f"{rel}:{first}: {name} has {length} lines "
                            f"(limit {args.max_function})")

    if args.report:
        print("Longest functions:")
        for length, rel, first, name in sorted(
                all_functions, key=lambda f: (-f[0], f[1], f[2]))[:20]:
            print(f"  {length:5d}  {rel}:{first}  {name}")
        if excluded:
            print("Excluded: " + ", ".join(sorted(excluded)))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} over the limits", file=sys.stderr)
        return 1
    if not args.report:
        print("code size: all within the limits")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
