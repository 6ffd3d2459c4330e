/// \file
/// Positions for the language server (LspImpl.h): tilec's source ranges count lines from 1 and columns in
/// bytes from 1; the protocol counts both from 0 and columns in UTF-16 code units, so a character outside
/// ASCII is 1 unit for 2 or 3 bytes of UTF-8, and one outside the Basic Multilingual Plane 2 units for 4.
#include "lsp/LspImpl.h"

#include "eval/ModuleLoader.h"

#include <stdexcept>

namespace tilec::lsp {

namespace {

/// The length of the UTF-8 sequence that byte `c` starts (1 for a byte that starts none).
size_t sequenceLength(unsigned char c) { return c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF8 ? 4 : 1; }

/// Whether line[i, i + n) is a lead byte followed by n - 1 continuation bytes.
bool wellFormed(std::string_view line, size_t i, size_t n) {
    if (i + n > line.size()) return false;
    for (size_t k = 1; k < n; ++k)
        if (((unsigned char)line[i + k] >> 6) != 2) return false;
    return true;
}

/// One character of `line` at byte `i`: its bytes and its UTF-16 units.
std::pair<size_t, int> character(std::string_view line, size_t i) {
    size_t n = sequenceLength((unsigned char)line[i]);
    if (n > 1 && !wellFormed(line, i, n)) n = 1;
    return {n, n == 4 ? 2 : 1};
}

int hexValue(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int intMember(const Value &o, const char *key) {
    double d = o.at(key).asNumber(key);
    if (!(d >= 0 && d < 1e9)) throw std::invalid_argument(std::string("'") + key + "' is out of range");
    return (int)d;
}

} // namespace

std::string_view lineAt(std::string_view text, int line0) {
    size_t b = 0;
    for (int l = 0; l < line0; ++l) {
        size_t nl = text.find('\n', b);
        if (nl == std::string_view::npos) return {};
        b = nl + 1;
    }
    size_t e = text.find('\n', b);
    if (e == std::string_view::npos) e = text.size();
    if (e > b && text[e - 1] == '\r') --e;
    return text.substr(b, e - b);
}

int utf16Units(std::string_view line, size_t bytes) {
    int units = 0;
    for (size_t i = 0; i < bytes && i < line.size();) {
        auto [n, u] = character(line, i);
        i += n;
        units += u;
    }
    return units;
}

size_t byteOffset(std::string_view line, int units) {
    size_t i = 0;
    for (int seen = 0; i < line.size() && seen < units;) {
        auto [n, u] = character(line, i);
        i += n;
        seen += u;
    }
    return i;
}

Value positionJson(int line, int character) {
    return Value::object().set("line", Value::number(line)).set("character", Value::number(character));
}

Value rangeJson(std::string_view text, const SourceRange &r) {
    if (!r.valid()) return Value::object().set("start", positionJson(0, 0)).set("end", positionJson(0, 0));
    std::string_view first = lineAt(text, r.line - 1);
    int startChar = utf16Units(first, (size_t)std::max(0, r.col - 1));
    int endLine = r.line - 1, endChar;
    if (r.endLine > 0 && (r.endLine > r.line || (r.endLine == r.line && r.endCol > r.col))) {
        endLine = r.endLine - 1;
        endChar = utf16Units(lineAt(text, endLine), (size_t)std::max(0, r.endCol - 1));
    } else {
        // No end: the character at the start (nothing past the line's end).
        size_t b = (size_t)std::max(0, r.col - 1);
        endChar = b < first.size() ? startChar + character(first, b).second : startChar;
    }
    return Value::object().set("start", positionJson(r.line - 1, startChar)).set("end", positionJson(endLine, endChar));
}

Position positionOf(const Value &params) {
    const Value &p = params.at("position");
    return {intMember(p, "line"), intMember(p, "character")};
}

std::string pathFromUri(const std::string &uri) {
    const std::string scheme = "file://";
    if (uri.compare(0, scheme.size(), scheme) != 0) return "";
    size_t slash = uri.find('/', scheme.size()); // after the authority (empty for local files)
    if (slash == std::string::npos) return "";
    std::string path;
    for (size_t i = slash; i < uri.size(); ++i) {
        int hi = 0, lo = 0;
        if (uri[i] == '%' && i + 2 < uri.size() && (hi = hexValue(uri[i + 1])) >= 0 && (lo = hexValue(uri[i + 2])) >= 0) {
            path += (char)(hi * 16 + lo);
            i += 2;
        } else {
            path += uri[i];
        }
    }
    return path;
}

std::string uriFromPath(const std::string &path) {
    std::string abs = path.empty() || path[0] == '/' ? path : eval::canonicalPath(path);
    std::string uri = "file://";
    for (unsigned char c : abs) {
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
                     c == '-' || c == '_' || c == '.' || c == '~';
        if (plain) {
            uri += (char)c;
        } else {
            static const char kHex[] = "0123456789ABCDEF";
            uri += '%';
            uri += kHex[c >> 4];
            uri += kHex[c & 15];
        }
    }
    return uri;
}

bool identifierByte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

std::vector<std::string> dottedNameAt(std::string_view line, size_t col, bool upToCursor) {
    col = std::min(col, line.size());
    size_t start = col, end = col;
    while (start > 0 && identifierByte((unsigned char)line[start - 1])) --start;
    if (!upToCursor)
        while (end < line.size() && identifierByte((unsigned char)line[end])) ++end;
    if (start == end && !upToCursor) return {};
    std::vector<std::string> parts{std::string(line.substr(start, end - start))};
    while (start > 0 && line[start - 1] == '.') {
        size_t e = start - 1, b = e;
        while (b > 0 && identifierByte((unsigned char)line[b - 1])) --b;
        if (b == e) break;
        parts.insert(parts.begin(), std::string(line.substr(b, e - b)));
        start = b;
    }
    return parts;
}

SourceRange findWord(const SourceManager &sm, int file, int line, int col, const std::string &name, int lastLine) {
    if (file < 0 || file >= sm.fileCount() || name.empty()) return {};
    for (int l = std::max(1, line); l <= lastLine; ++l) {
        std::string_view text = sm.line(file, l);
        if (text.data() == nullptr) return {}; // past the end (an empty line in the file has its address)
        size_t from = l == line ? (size_t)std::max(0, col - 1) : 0;
        for (size_t at = text.find(name, from); at != std::string_view::npos; at = text.find(name, at + 1)) {
            bool before = at > 0 && identifierByte((unsigned char)text[at - 1]);
            bool after = at + name.size() < text.size() && identifierByte((unsigned char)text[at + name.size()]);
            if (!before && !after) {
                SourceRange r;
                r.file = file;
                r.line = r.endLine = l;
                r.col = (int)at + 1;
                r.endCol = r.col + (int)name.size();
                return r;
            }
        }
    }
    return {};
}

} // namespace tilec::lsp
