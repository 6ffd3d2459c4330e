/// \file
/// Checking and decoding a source file (NUL bytes, invalid UTF-8) and mapping ANTLR's code point indexes
/// back to the byte lines and columns that SourceRange uses.
#include "parse/ParseInternal.h"

#include <algorithm>
#include <cstdio>

namespace tilec::parse {

SourceText::SourceText(int file, const std::string &bytes) : file_(file), bytes_(bytes) {
    lineStarts_.push_back(0);
    for (size_t i = 0; i < bytes_.size(); ++i)
        if (bytes_[i] == '\n') lineStarts_.push_back(i + 1);
}

namespace {

/// Length of the valid UTF-8 sequence at `s[i]`, or 0 when it is invalid (overlong forms, surrogates and
/// code points above U+10FFFF are invalid, as in Python's decoder).
size_t utf8Length(const std::string &s, size_t i, char32_t &cp) {
    auto at = [&](size_t k) -> unsigned { return k < s.size() ? (unsigned char)s[k] : 0u; };
    auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
        unsigned c = at(k);
        return k < s.size() && c >= lo && c <= hi;
    };
    unsigned c = at(i);
    if (c < 0x80) {
        cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        if (!cont(i + 1)) return 0;
        cp = ((c & 0x1F) << 6) | (at(i + 1) & 0x3F);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (!cont(i + 1, lo, hi) || !cont(i + 2)) return 0;
        cp = ((c & 0x0F) << 12) | ((at(i + 1) & 0x3F) << 6) | (at(i + 2) & 0x3F);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (!cont(i + 1, lo, hi) || !cont(i + 2) || !cont(i + 3)) return 0;
        cp = ((c & 0x07) << 18) | ((at(i + 1) & 0x3F) << 12) | ((at(i + 2) & 0x3F) << 6) | (at(i + 3) & 0x3F);
        return 4;
    }
    return 0;
}

} // namespace

bool SourceText::decode(SyntaxErrors &errs) {
    if (size_t nul = bytes_.find('\0'); nul != std::string::npos) {
        errs.add(SyntaxError::Fatal, nul, range(nul, nul + 1), "file looks binary (contains a NUL byte)");
        return false;
    }
    if (bytes_.size() >= 3 && bytes_.compare(0, 3, "\xEF\xBB\xBF") == 0) skip_ = 3;
    cps_.reserve(bytes_.size() - skip_);
    for (size_t i = skip_; i < bytes_.size();) {
        char32_t cp = 0;
        size_t n = utf8Length(bytes_, i, cp);
        if (n == 0) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "invalid UTF-8 in source (byte 0x%02x)", (unsigned)(unsigned char)bytes_[i]);
            errs.add(SyntaxError::Fatal, i, range(i, i + 1), buf);
            return false;
        }
        if (n > 1 && cpToByte_.empty()) {
            // The first multi-byte character: from here on positions need the map.
            cpToByte_.reserve(bytes_.size());
            for (size_t k = 0; k < cps_.size(); ++k) cpToByte_.push_back(uint32_t(k + skip_));
        }
        if (!cpToByte_.empty()) cpToByte_.push_back(uint32_t(i));
        cps_.push_back(cp);
        i += n;
    }
    return true;
}

size_t SourceText::byteOf(size_t cp) const {
    if (cp >= cps_.size()) return bytes_.size();
    return cpToByte_.empty() ? cp + skip_ : cpToByte_[cp];
}

int SourceText::lineOf(size_t offset) const {
    int n = int(lineStarts_.size());
    if (lastLine_ <= n && offset >= lineStarts_[lastLine_ - 1]) {
        if (lastLine_ == n || offset < lineStarts_[lastLine_]) return lastLine_;
        if (lastLine_ + 1 == n || (lastLine_ + 1 < n && offset < lineStarts_[lastLine_ + 1])) return ++lastLine_;
    }
    auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
    lastLine_ = int(it - lineStarts_.begin());
    return lastLine_;
}

SourceRange SourceText::range(size_t begin, size_t end) const {
    begin = std::min(begin, bytes_.size());
    end = std::min(end, bytes_.size());
    SourceRange r;
    r.file = file_;
    r.line = lineOf(begin);
    r.col = int(begin - lineStart(r.line)) + 1;
    if (end <= begin) {
        r.endLine = r.line;
        r.endCol = r.col + 1;
        return r;
    }
    // The end is exclusive: place the last byte, then step past it.
    size_t last = end - 1;
    r.endLine = lineOf(last);
    r.endCol = int(last - lineStart(r.endLine)) + 2;
    return r;
}

size_t SourceText::tokenBegin(const antlr4::Token *t) const {
    size_t s = t->getStartIndex();
    if (s == INVALID_INDEX) return bytes_.size();
    return byteOf(s);
}

size_t SourceText::tokenEnd(const antlr4::Token *t) const {
    size_t s = t->getStartIndex(), e = t->getStopIndex();
    if (s == INVALID_INDEX || e == INVALID_INDEX || e + 1 <= s) return tokenBegin(t);
    return byteOf(e + 1);
}

std::string_view SourceText::tokenText(const antlr4::Token *t) const {
    size_t b = tokenBegin(t), e = tokenEnd(t);
    return std::string_view(bytes_).substr(b, e - b);
}

bool stackExhausted(uintptr_t base) {
    uintptr_t here = stackPosition();
    // The stack grows down on every target we build for.
    return here < base && base - here > kStackBudget;
}

} // namespace tilec::parse
