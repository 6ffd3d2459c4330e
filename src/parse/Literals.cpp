/// \file
/// Number and string literals: integer bases and underscores, the int64 range, float parsing without
/// the locale, and Python's string escapes.
#include "parse/ASTBuilder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace tilec::parse {

bool parseInteger(std::string_view text, int64_t &value, std::string &err) {
    std::string digits;
    digits.reserve(text.size());
    for (char c : text)
        if (c != '_') digits += c;
    unsigned base = 10;
    size_t start = 0;
    if (digits.size() > 1 && digits[0] == '0') {
        char p = digits[1];
        if (p == 'x' || p == 'X') base = 16, start = 2;
        else if (p == 'o' || p == 'O') base = 8, start = 2;
        else if (p == 'b' || p == 'B') base = 2, start = 2;
        else if (digits.find_first_not_of('0') != std::string::npos) {
            err = "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers";
            return false;
        }
    }
    constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
    uint64_t v = 0;
    for (size_t i = start; i < digits.size(); ++i) {
        char c = digits[i];
        unsigned d = c >= '0' && c <= '9' ? unsigned(c - '0') : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10) : unsigned(c - 'A' + 10);
        if (v > (kMax - d) / base) {
            err = "integer literal is too large";
            return false;
        }
        v = v * base + d;
    }
    value = int64_t(v);
    return true;
}

double parseFloat(std::string_view text) {
    std::string s;
    s.reserve(text.size());
    for (char c : text)
        if (c != '_') s += c;
    double v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
        // Too small rounds to zero, too large to infinity.
        size_t e = s.find_first_of("eE");
        bool tiny = e != std::string::npos && e + 1 < s.size() && s[e + 1] == '-';
        return tiny ? 0.0 : std::numeric_limits<double>::infinity();
    }
    return v;
}

namespace {

void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        // Lone surrogates from \ud800 escapes are kept as their 3-byte form, like Python's surrogatepass.
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

int hexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

} // namespace

StringToken splitString(std::string_view tok) {
    StringToken st;
    size_t i = 0;
    for (; i < tok.size() && tok[i] != '\'' && tok[i] != '"'; ++i) {
        char c = char(tok[i] | 0x20);
        if (c == 'r') st.raw = true;
        if (c == 'b') st.bytes = true;
        if (c == 'f') st.format = true;
    }
    st.quotes = (tok.size() - i >= 6 && tok[i + 1] == tok[i] && tok[i + 2] == tok[i]) ? 3 : 1;
    st.bodyBegin = std::min(i + st.quotes, tok.size());
    st.bodyEnd = std::max(st.bodyBegin, tok.size() >= st.quotes ? tok.size() - st.quotes : st.bodyBegin);
    return st;
}

bool decodeString(std::string_view tok, StringPiece &out, std::string &err, size_t &errPos) {
    StringToken st = splitString(tok);
    out.isBytes = st.bytes;
    out.isFormat = st.format;
    return decodeBody(tok, st.bodyBegin, st.bodyEnd, st.raw, out, err, errPos);
}

bool decodeBody(std::string_view tok, size_t b, size_t e, bool raw, StringPiece &out, std::string &err, size_t &errPos) {
    std::string &v = out.value;
    v.reserve(v.size() + (e - b));
    for (size_t k = b; k < e;) {
        char c = tok[k];
        if (c == '\r' && k + 1 < e && tok[k + 1] == '\n') { // source newlines are "\n" whatever the file uses
            ++k;
            continue;
        }
        if (out.isBytes && (unsigned char)c >= 0x80) {
            err = "bytes can only contain ASCII literal characters";
            errPos = k;
            return false;
        }
        if (c != '\\' || raw) {
            v += c;
            ++k;
            if (c == '\\' && k < e) v += tok[k++]; // a raw backslash still keeps the next quote in the string
            continue;
        }
        size_t at = k;
        if (k + 1 >= e) { // cannot happen for a lexed token; keep the backslash
            v += c;
            ++k;
            continue;
        }
        char n = tok[k + 1];
        k += 2;
        switch (n) {
        case '\n': break;
        case '\r':
            if (k < e && tok[k] == '\n') ++k;
            break;
        case '\\': v += '\\'; break;
        case '\'': v += '\''; break;
        case '"': v += '"'; break;
        case 'a': v += '\a'; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'n': v += '\n'; break;
        case 'r': v += '\r'; break;
        case 't': v += '\t'; break;
        case 'v': v += '\v'; break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t cp = uint32_t(n - '0');
            for (int d = 0; d < 2 && k < e && tok[k] >= '0' && tok[k] <= '7'; ++d) cp = cp * 8 + uint32_t(tok[k++] - '0');
            if (out.isBytes) v += char(cp & 0xFF);
            else appendUtf8(v, cp);
            break;
        }
        case 'x': case 'u': case 'U': {
            int len = n == 'x' ? 2 : n == 'u' ? 4 : 8;
            if (out.isBytes && n != 'x') { // bytes keep \u and \U as written
                v += '\\';
                v += n;
                break;
            }
            uint32_t cp = 0;
            for (int d = 0; d < len; ++d) {
                int h = k < e ? hexValue(tok[k]) : -1;
                if (h < 0) {
                    err = n == 'x' ? "truncated \\xXX escape" : n == 'u' ? "truncated \\uXXXX escape" : "truncated \\UXXXXXXXX escape";
                    errPos = at;
                    return false;
                }
                cp = cp * 16 + uint32_t(h);
                ++k;
            }
            if (cp > 0x10FFFF) {
                err = "illegal Unicode character in \\U escape";
                errPos = at;
                return false;
            }
            if (out.isBytes) v += char(cp);
            else appendUtf8(v, cp);
            break;
        }
        case 'N':
            if (!out.isBytes) out.namedEscape = true;
            [[fallthrough]];
        default: // unknown escapes stay as written
            v += '\\';
            v += n;
            break;
        }
    }
    return true;
}

} // namespace tilec::parse
