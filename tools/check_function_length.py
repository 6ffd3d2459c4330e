#!/usr/bin/env python3
"""Lists the C++ functions longer than the project allows (docs/ARCHITECTURE.md: functions fit on a screen).

    tools/check_function_length.py [--max N] [PATH...]

PATH: files or folders (default: the checkout's src/); every *.cpp, *.h and *.hpp below a folder is read.
A function is a brace-enclosed body at namespace or class scope whose head is a declarator (a parameter list,
then qualifiers, a trailing return type or a constructor's initializer list); its length runs from the first
line of its head to its closing brace, so lambdas and local classes count toward the function that holds them.
Comments, string and character literals and preprocessor lines are blanked before the braces are counted.
Prints `FILE:LINE: NAME is N lines (limit M)` for each function over the limit (default 150), longest first;
exit status 1 when there is one, 0 otherwise. `--self-test` checks what it finds in a sample of the constructs
that matter (initializer lists, access specifiers, literals with braces, initializers at namespace scope).
tests/CMakeLists.txt runs both as ctests (`function_length`, `function_length_self_test`).
"""
import argparse
import os
import re
import sys
import tempfile

CLASS_HEAD = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|enum|extern)\b", re.S)
ACCESS = re.compile(r"\b(?:public|private|protected)\s*:(?!:)")
ID = r"(?:operator\s*(?:\(\)|[^\s(]+)|~?[A-Za-z_]\w*)"
NAME = re.compile(r"(" + ID + r"(?:\s*<[^()]*>)?(?:\s*::\s*" + ID + r")*)\s*\(")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces (newlines kept)."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                out.append("\n" if text[i] == "\n" else " ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find(")" + raw.group(1) + '"', i + raw.end())
            end = n if end < 0 else end + len(raw.group(1)) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:end - 1]) + '"')
            i = end
            continue
        if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() and \
                re.match(r"[0-9]", text[i - 1]):  # a digit separator: 1'000
            out.append(c)
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_function(head):
    """Whether a brace opened after `head` (the text since the last declaration at this scope) starts a body."""
    head = ACCESS.sub(" ", head).strip()
    if not head or "(" not in head or CLASS_HEAD.match(head):
        return False
    if "operator" in head:
        return True
    # `x = ...{` or `T x{...}` initializers: an `=` (or no parameter list) at the top level before the first `(`
    depth = 0
    for ch in head:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(":
            break
        elif ch == "=" and depth <= 0:
            return False
    # what follows the parameter list: qualifiers, a trailing return type or a constructor's initializer list
    close = head.rfind(")")
    tail = re.sub(r"\b(?:const|volatile|noexcept|override|final|mutable|try)\b|&&?|\s", "", head[close + 1:])
    if tail == "" or tail.startswith("->"):
        return True
    rest = head[head.find(")", head.find("(")) + 1:].strip()
    return rest.startswith(":") and head.rstrip().endswith("}")


def functions(path):
    """(name, first line, last line) of each function of a file."""
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    found = []
    stack = []  # per open brace: 'scope' (namespace, class), 'function', 'other'
    head_line, head = 1, []
    line = 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        in_scope = all(kind == "scope" for kind, _, _ in stack)
        if ch == "{":
            if in_scope:
                h = "".join(head)
                if is_function(h):
                    bare = ACCESS.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), h)
                    first = head_line + bare[:len(bare) - len(bare.lstrip())].count("\n")
                    m = NAME.search(bare)
                    stack.append(("function", first, m.group(1).replace(" ", "") if m else "?"))
                elif CLASS_HEAD.match(ACCESS.sub(" ", h).strip()) or not h.strip():
                    stack.append(("scope", line, ""))
                    head = []
                else:  # an initializer: its braces stay part of the head
                    stack.append(("other", line, ""))
                    head.append(ch)
            else:
                stack.append(("other", line, ""))
            continue
        if ch == "}":
            if not stack:
                continue
            kind, start, name = stack.pop()
            if kind == "function":
                found.append((name, start, line))
                head = []
            elif kind == "scope":
                head = []
            elif all(k == "scope" for k, _, _ in stack):
                head.append(ch)
            continue
        if in_scope:
            if ch == ";":
                head = []
            else:
                if not head:
                    head_line = line - (ch == "\n")
                head.append(ch)
    return found


SAMPLE = r'''#include <x>
namespace a {
template <typename T>
struct S : B {
  public:
    S(int x) : a(x), b{x} {
        f("{");
    }
    int g() const override { return 1; }
    auto h() -> int {
        return 2;
    }
};
const std::map<int, int> table = {{1, 2}, {3, 4}};
static int arr[] {1, 2};
int S::operator()(int) {
    auto l = [](int y) { return y; };
    char c = '{';  // }
    return R"x( } )x"[0];
}
enum class E : int { A, B };
extern "C" {
void cfun(void) {
  /* } */
}
}
#define M(x) {
Foo::~Foo() {
}
} // namespace a
'''
SAMPLE_FUNCTIONS = [("S", 6, 8), ("g", 9, 9), ("h", 10, 12), ("S::operator()", 16, 20), ("cfun", 23, 25),
                    ("Foo::~Foo", 28, 29)]


def self_test():
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(SAMPLE)
    try:
        found = sorted(functions(f.name), key=lambda x: x[1])
    finally:
        os.unlink(f.name)
    if found != SAMPLE_FUNCTIONS:
        print(f"check_function_length: self-test found {found}, expected {SAMPLE_FUNCTIONS}")
        return 1
    print("check_function_length: self-test passed")
    return 0


def sources(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith((".cpp", ".h", ".hpp")):
                        yield os.path.join(root, f)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=150, help="the most lines a function may have (default 150)")
    ap.add_argument("--self-test", action="store_true", help="check the checker on a sample")
    ap.add_argument("paths", nargs="*")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = args.paths or [os.path.join(root, "src")]
    long = []
    for path in sources(paths):
        for name, first, last in functions(path):
            if last - first + 1 > args.max:
                long.append((last - first + 1, os.path.relpath(path, root), first, name))
    for n, path, first, name in sorted(long, key=lambda x: (-x[0], x[1])):
        print(f"{path}:{first}: {name} is {n} lines (limit {args.max})")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
