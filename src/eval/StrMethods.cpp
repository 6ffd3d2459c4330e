/// \file
/// The methods of `str` values: case and class tests, prefixes, strip, split, replace, find, count, join and
/// format (Format.cpp).
#include "eval/InterpImpl.h"

#include <algorithm>

namespace tilec::eval {

namespace {

constexpr size_t kMaxString = size_t(1) << 20; ///< longest string a method may build

/// `s.split(sep, maxsplit)` (from the right for rsplit); no `sep` splits at runs of white space, and the
/// part left after `maxsplit` splits keeps its white space on the far side, as in Python.
std::vector<Value> split(const std::string &s, const std::optional<std::string> &sep, int64_t maxsplit, bool right) {
    std::vector<std::string> parts;
    auto more = [&] { return maxsplit < 0 || (int64_t)parts.size() < maxsplit; };
    if (sep) {
        std::string rest = s;
        for (size_t at; more() && (at = right ? rest.rfind(*sep) : rest.find(*sep)) != std::string::npos;) {
            parts.push_back(right ? rest.substr(at + sep->size()) : rest.substr(0, at));
            rest = right ? rest.substr(0, at) : rest.substr(at + sep->size());
        }
        parts.push_back(rest);
    } else if (!right) {
        const char *ws = " \t\n\r\f\v";
        for (size_t i = 0; (i = s.find_first_not_of(ws, i)) != std::string::npos;) {
            size_t j = more() ? s.find_first_of(ws, i) : std::string::npos;
            parts.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
            if ((i = j) == std::string::npos) break;
        }
    } else {
        const char *ws = " \t\n\r\f\v";
        for (size_t e = s.size(), last; e > 0 && (last = s.find_last_not_of(ws, e - 1)) != std::string::npos;) {
            size_t j = more() ? s.find_last_of(ws, last) : std::string::npos, b = j == std::string::npos ? 0 : j + 1;
            parts.push_back(s.substr(b, last + 1 - b));
            if (j == std::string::npos) break;
            e = j;
        }
    }
    if (right) std::reverse(parts.begin(), parts.end());
    std::vector<Value> out;
    for (auto &p : parts) out.push_back(Value::str(p));
    return out;
}

} // namespace

std::optional<Value> strMethod(const std::string &s, const std::string &name) {
    if (name == "upper" || name == "lower")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            bindArgs(in, a, "str." + name, {});
            in.charge((int64_t)s.size());
            std::string out = s;
            for (char &c : out) c = name == "upper" ? (char)toupper((unsigned char)c) : (char)tolower((unsigned char)c);
            return Value::str(out);
        });
    if (name == "isdigit" || name == "isalpha")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            bindArgs(in, a, "str." + name, {});
            bool ok = !s.empty();
            for (unsigned char c : s) ok = ok && (name == "isdigit" ? isdigit(c) : isalpha(c));
            return Value::boolean(ok);
        });
    if (name == "startswith" || name == "endswith")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str." + name, {"prefix"});
            std::string p = in.toStr(*x[0], "prefix");
            bool ok = p.size() <= s.size() &&
                      (name == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0);
            return Value::boolean(ok);
        });
    if (name == "strip" || name == "lstrip" || name == "rstrip")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str." + name, {"chars?"});
            std::string chars = x[0] && !x[0]->value.is(VK::None) ? in.toStr(*x[0], "chars") : " \t\n\r\f\v";
            size_t b = name == "rstrip" ? 0 : s.find_first_not_of(chars), e = name == "lstrip" ? s.size() : s.find_last_not_of(chars) + 1;
            return Value::str(b == std::string::npos || e <= b ? "" : s.substr(b, e - b));
        });
    if (name == "format")
        return builtinFunction("str.format", [s](InterpImpl &in, CallArgs &a) { return in.strFormat(s, a); });
    if (name == "join")
        return builtinFunction("str.join", [s](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str.join", {"iterable"});
            std::string out;
            auto parts = in.iterate(x[0]->value, x[0]->range);
            for (size_t i = 0; i < parts.size(); ++i) {
                out += (i ? s : "") + in.toStr({parts[i], x[0]->range}, "joined item");
                if (out.size() > (size_t(1) << 20)) in.fail(a.call, "this string is too large for compile-time evaluation");
            }
            in.charge((int64_t)out.size());
            return Value::str(out);
        });
    if (name == "split" || name == "rsplit")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str." + name, {"sep?", "maxsplit?"});
            std::optional<std::string> sep;
            if (x[0] && !x[0]->value.is(VK::None)) sep = in.toStr(*x[0], "sep");
            if (sep && sep->empty()) in.failPython("ValueError", x[0]->range, "empty separator");
            in.charge((int64_t)s.size());
            return Value::list(split(s, sep, x[1] ? in.toInt(*x[1], "maxsplit") : -1, name == "rsplit"));
        });
    if (name == "replace")
        return builtinFunction("str.replace", [s](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str.replace", {"old", "new", "count?"});
            std::string from = in.toStr(*x[0], "old"), to = in.toStr(*x[1], "new"), out;
            int64_t count = x[2] ? in.toInt(*x[2], "count") : -1, n = 0;
            size_t at = 0;
            // An empty `old` matches before every character and at the end.
            for (size_t next; (count < 0 || n < count) && at <= s.size() &&
                              (next = from.empty() ? at : s.find(from, at)) != std::string::npos;
                 ++n) {
                out += s.substr(at, next - at) + to;
                if (from.empty() && next < s.size()) out += s[next];
                at = next + (from.empty() ? 1 : from.size());
                if (out.size() > kMaxString) in.fail(a.call, "this string is too large for compile-time evaluation");
            }
            if (at < s.size()) out += s.substr(at);
            in.charge((int64_t)out.size());
            return Value::str(out);
        });
    if (name == "find" || name == "rfind" || name == "count")
        return builtinFunction("str." + name, [s, name](InterpImpl &in, CallArgs &a) {
            auto x = bindArgs(in, a, "str." + name, {"sub"});
            std::string sub = in.toStr(*x[0], "sub");
            if (name == "count") {
                if (sub.empty()) return Value::integer((int64_t)s.size() + 1);
                int64_t n = 0;
                for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
                return Value::integer(n);
            }
            size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
            return Value::integer(at == std::string::npos ? -1 : (int64_t)at);
        });
    return std::nullopt;
}

} // namespace tilec::eval
