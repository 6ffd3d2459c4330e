/// \file
/// f-strings and format(): Python's format specification mini-language
/// (`[[fill]align][sign][z][#][0][width][grouping][.precision][type]`) for str, int, bool and float, a
/// class's own __format__ / __str__ / __repr__, and the evaluation of JoinedStr / FormattedValue nodes.
#include "eval/InterpImpl.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tilec::eval {

namespace {

/// Longest string a format may produce (widths are user input: `{x:1000000000}`).
constexpr int64_t kMaxFormatted = int64_t(1) << 20;

constexpr size_t npos = std::string_view::npos;

/// Thrown out of str.format's expansion when a field is opaque or poison: so is the whole string.
struct NotAString {
    Value value;
};

struct Spec {
    std::string fill = " ";
    char align = 0, sign = 0, grouping = 0, type = 0;
    bool alternate = false, zero = false, negZero = false;
    int64_t width = -1, precision = -1;
};

size_t utf8Length(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

/// Parses a spec; returns the error (a ValueError's message) or "".
std::string parseSpec(std::string_view s, Spec &out) {
    size_t i = 0;
    auto isAlign = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
    size_t first = s.empty() ? 0 : 1;
    while (first < s.size() && ((unsigned char)s[first] & 0xC0) == 0x80) ++first; // one code point of fill
    if (first < s.size() && isAlign(s[first])) {
        out.fill = std::string(s.substr(0, first));
        out.align = s[first];
        i = first + 1;
    } else if (!s.empty() && isAlign(s[0])) {
        out.align = s[0];
        i = 1;
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) out.sign = s[i++];
    if (i < s.size() && s[i] == 'z') out.negZero = true, ++i;
    if (i < s.size() && s[i] == '#') out.alternate = true, ++i;
    if (i < s.size() && s[i] == '0') out.zero = true, ++i;
    auto number = [&](int64_t &v) {
        size_t from = i;
        v = 0;
        for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) v = std::min<int64_t>(v * 10 + (s[i] - '0'), kMaxFormatted + 1);
        return i > from;
    };
    int64_t w;
    if (number(w)) out.width = w;
    if (i < s.size() && (s[i] == ',' || s[i] == '_')) out.grouping = s[i++];
    if (i < s.size() && s[i] == '.') {
        ++i;
        int64_t p;
        if (!number(p)) return "Format specifier missing precision";
        out.precision = p;
    }
    if (i < s.size()) out.type = s[i++];
    if (i < s.size()) return "Invalid format specifier '" + std::string(s) + "'";
    if (out.width > kMaxFormatted || out.precision > kMaxFormatted) return "Too many decimal digits in format string";
    return "";
}

/// Groups the digits of `digits` (no sign, no prefix) by `every` with `sep`.
std::string group(const std::string &digits, char sep, size_t every) {
    if (!sep) return digits;
    std::string out;
    size_t n = digits.size();
    for (size_t k = 0; k < n; ++k) {
        if (k && (n - k) % every == 0) out += sep;
        out += digits[k];
    }
    return out;
}

/// Pads `body` (after `sign` and `prefix`) to the width with the fill and alignment.
std::string pad(const Spec &sp, const std::string &sign, const std::string &body, char defaultAlign) {
    char align = sp.align ? sp.align : defaultAlign;
    size_t len = utf8Length(sign) + utf8Length(body);
    if (sp.width < 0 || (int64_t)len >= sp.width) return sign + body;
    size_t n = size_t(sp.width) - len;
    auto fill = [&](size_t k) {
        std::string f;
        for (size_t j = 0; j < k; ++j) f += sp.fill;
        return f;
    };
    switch (align) {
    case '<': return sign + body + fill(n);
    case '^': return fill(n / 2) + sign + body + fill(n - n / 2);
    case '=': return sign + fill(n) + body;
    default: return fill(n) + sign + body;
    }
}

/// A number's digits (with its prefix and grouping) padded: with '0' and '=' the zeros take separators too.
std::string padNumber(const Spec &sp, bool negative, const std::string &prefix, std::string digits,
                      const std::string &rest, size_t every) {
    std::string sign = negative ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
    Spec s = sp;
    if (s.zero && !s.align) s.align = '=';
    if (s.zero && s.fill == " " && (sp.align == 0 || sp.align == '=')) s.fill = "0";
    if (s.align == '=' && s.fill == "0" && s.grouping && s.width > 0) {
        auto len = [&] { return sign.size() + prefix.size() + group(digits, s.grouping, every).size() + rest.size(); };
        while ((int64_t)len() < s.width) digits.insert(digits.begin(), '0');
        if ((int64_t)len() > s.width && digits.size() > 1 && digits[0] == '0') digits.erase(digits.begin());
    }
    return pad(s, sign + prefix, group(digits, s.grouping, every) + rest, '>');
}

std::string toBase(uint64_t v, int base, bool upper) {
    if (v == 0) return "0";
    const char *d = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    std::string out;
    for (; v; v /= uint64_t(base)) out.insert(out.begin(), d[v % uint64_t(base)]);
    return out;
}

std::string formatFloat(double x, const Spec &sp, bool fromInt, std::string &err);

std::string formatInt(int64_t x, const Spec &sp, std::string &err) {
    char t = sp.type ? sp.type : 'd';
    if (std::strchr("eEfFgG%", t)) return formatFloat(double(x), sp, true, err);
    if (!std::strchr("dnbcoxX", t)) {
        err = std::string("Unknown format code '") + t + "' for object of type 'int'";
        return "";
    }
    if (sp.precision >= 0) {
        err = "Precision not allowed in integer format specifier";
        return "";
    }
    if (t == 'c') {
        if (x < 0 || x > 0x10FFFF) {
            err = "%c arg not in range(0x110000)";
            return "";
        }
        std::string ch;
        uint32_t cp = uint32_t(x);
        if (cp < 0x80) ch += char(cp);
        else if (cp < 0x800) ch += char(0xC0 | (cp >> 6)), ch += char(0x80 | (cp & 0x3F));
        else if (cp < 0x10000) ch += char(0xE0 | (cp >> 12)), ch += char(0x80 | ((cp >> 6) & 0x3F)), ch += char(0x80 | (cp & 0x3F));
        else
            ch += char(0xF0 | (cp >> 18)), ch += char(0x80 | ((cp >> 12) & 0x3F)), ch += char(0x80 | ((cp >> 6) & 0x3F)),
                ch += char(0x80 | (cp & 0x3F));
        return pad(sp, "", ch, '>');
    }
    uint64_t mag = x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x);
    int base = t == 'b' ? 2 : t == 'o' ? 8 : (t == 'x' || t == 'X') ? 16 : 10;
    if (sp.grouping == ',' && base != 10) {
        err = std::string("Cannot specify ',' with '") + t + "'.";
        return "";
    }
    std::string prefix = sp.alternate && base != 10 ? std::string("0") + (t == 'X' ? 'X' : t) : "";
    return padNumber(sp, x < 0, prefix, toBase(mag, base, t == 'X'), "", base == 10 ? 3 : 4);
}

std::string cformat(const char *fmt, int precision, double x) {
    int n = std::snprintf(nullptr, 0, fmt, precision, x);
    std::string s(size_t(n > 0 ? n : 0), '\0');
    std::snprintf(s.data(), s.size() + 1, fmt, precision, x);
    return s;
}

std::string formatFloat(double x, const Spec &sp, bool fromInt, std::string &err) {
    char t = sp.type;
    if (t && !std::strchr("eEfFgGn%", t)) {
        err = std::string("Unknown format code '") + t + "' for object of type '" + (fromInt ? "int" : "float") + "'";
        return "";
    }
    bool negative = std::signbit(x) && !std::isnan(x);
    double a = std::fabs(x);
    std::string body, rest;
    int prec = sp.precision >= 0 ? int(sp.precision) : 6;
    if (std::isinf(a) || std::isnan(a)) {
        body = std::isnan(a) ? "nan" : "inf";
        if (t == 'E' || t == 'F' || t == 'G') body = std::isnan(a) ? "NAN" : "INF";
        if (t == '%') rest = "%";
    } else if (t == 'f' || t == 'F' || t == '%') {
        body = cformat(sp.alternate ? "%#.*f" : "%.*f", prec, t == '%' ? a * 100 : a);
        if (t == '%') rest = "%";
    } else if (t == 'e' || t == 'E') {
        body = cformat(t == 'e' ? (sp.alternate ? "%#.*e" : "%.*e") : (sp.alternate ? "%#.*E" : "%.*E"), prec, a);
    } else if (t == 'g' || t == 'G' || t == 'n' || sp.precision >= 0) {
        // No type with a precision: 'g', but a fixed-point result keeps one digit after the point.
        int p = prec == 0 ? 1 : prec;
        body = cformat(t == 'G' ? (sp.alternate ? "%#.*G" : "%.*G") : (sp.alternate ? "%#.*g" : "%.*g"), p, a);
        if (!t && body.find_first_of(".eE") == std::string::npos) body += ".0";
    } else {
        body = floatRepr(a); // no type, no precision: repr's shortest digits
    }
    if (sp.negZero && negative && body.find_first_of("123456789") == std::string::npos) negative = false;
    // Split into digits before the point (grouped, zero-padded) and the rest.
    size_t cut = body.find_first_not_of("0123456789");
    if (cut == std::string::npos) cut = body.size();
    if (std::isinf(a) || std::isnan(a)) {
        Spec s = sp;
        if (s.zero && !s.align) s.align = '='; // inf and nan are not zero-padded: the fill stays
        std::string sign = negative ? "-" : sp.sign == '+' ? "+" : sp.sign == ' ' ? " " : "";
        return pad(s, sign, body + rest, '>');
    }
    return padNumber(sp, negative, "", body.substr(0, cut), body.substr(cut) + rest, 3);
}

std::string formatStr(const std::string &s, const Spec &sp, std::string &err) {
    if (sp.type && sp.type != 's') {
        err = std::string("Unknown format code '") + sp.type + "' for object of type 'str'";
        return "";
    }
    if (sp.sign) err = "Sign not allowed in string format specifier";
    else if (sp.alternate) err = "Alternate form (#) not allowed in string format specifier";
    else if (sp.align == '=') err = "'=' alignment not allowed in string format specifier";
    else if (sp.grouping) err = std::string("Cannot specify '") + sp.grouping + "' with 's'.";
    if (!err.empty()) return "";
    std::string body = s;
    if (sp.precision >= 0 && (int64_t)utf8Length(s) > sp.precision) {
        size_t k = 0, n = 0;
        for (; k < s.size(); ++k)
            if (((unsigned char)s[k] & 0xC0) != 0x80 && n++ == size_t(sp.precision)) break;
        body = s.substr(0, k);
    }
    Spec p = sp;
    if (p.zero && p.fill == " " && !p.align) p.fill = "0";
    return pad(p, "", body, '<');
}

/// A method a user's class defines (not one tilec gives every object).
bool userMethod(const Value &v, const std::string &name) {
    if (!v.is(VK::Instance)) return false;
    for (auto &c : v.as<InstanceObj>().cls->mro) {
        auto it = c->ns->vars.find(name);
        if (it != c->ns->vars.end()) return it->second.is(VK::Function);
    }
    return false;
}

/// Python's ascii(): repr with every non-ASCII code point escaped.
std::string asciiOf(const std::string &r) {
    std::string out;
    for (size_t i = 0; i < r.size();) {
        unsigned char c = (unsigned char)r[i];
        if (c < 0x80) {
            out += char(c);
            ++i;
            continue;
        }
        int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        uint32_t cp = c & (n == 4 ? 0x07 : n == 3 ? 0x0F : 0x1F);
        for (int k = 1; k < n && i + size_t(k) < r.size(); ++k) cp = (cp << 6) | ((unsigned char)r[i + size_t(k)] & 0x3F);
        i += size_t(n);
        char buf[16];
        std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
        out += buf;
    }
    return out;
}

} // namespace

Value InterpImpl::callUserMethod(const Value &v, const std::string &name, std::vector<Value> args, const SourceRange &at) {
    CallArgs a;
    a.call = a.callee = at;
    for (auto &x : args) a.pos.push_back({std::move(x), at});
    return callValue(attributeOf(v, name, at), a);
}

/// repr() of a list, tuple or dict whose elements' repr may be a class's own __repr__.
Value InterpImpl::containerRepr(const Value &v, const SourceRange &at) {
    bool tuple = v.is(VK::Tuple), dict = v.is(VK::Dict);
    if (std::find(reprShown_.begin(), reprShown_.end(), v.obj.get()) != reprShown_.end())
        return Value::str(dict ? "{...}" : tuple ? "(...)" : "[...]"); // a cycle, shown as Python does
    struct Showing {
        std::vector<const void *> &shown;
        ~Showing() { shown.pop_back(); }
    } showing{reprShown_};
    reprShown_.push_back(v.obj.get());
    std::string out = dict ? "{" : tuple ? "(" : "[";
    auto add = [&](const Value &x) {
        Value r = strOf(x, 'r', at);
        if (!r.is(VK::Str)) throw NotAString{r};
        out += r.s;
        if ((int64_t)out.size() > kMaxFormatted) fail(at, "this string is too large for compile-time evaluation");
    };
    try {
        if (dict) {
            for (auto &kv : v.as<DictObj>().items) {
                out += out.size() > 1 ? ", " : "";
                add(kv.first);
                out += ": ";
                add(kv.second);
            }
        } else {
            auto &e = v.elements();
            for (size_t i = 0; i < e.size(); ++i) {
                out += i ? ", " : "";
                add(e[i]);
            }
            if (tuple && e.size() == 1) out += ",";
        }
    } catch (const NotAString &n) {
        return n.value;
    }
    return Value::str(out + (dict ? "}" : tuple ? ")" : "]"));
}

Value InterpImpl::strOf(const Value &v, char conversion, const SourceRange &at) {
    if (v.is(VK::Poison) || v.is(VK::Opaque)) return v;
    if (isRuntime(v)) failRuntime(at, "a value formatted into a string");
    if (v.is(VK::List) || v.is(VK::Tuple) || v.is(VK::Dict)) {
        Nest nest(*this, at); // nested containers: bounded like any other recursion
        Value r = containerRepr(v, at);
        return r.is(VK::Str) && conversion == 'a' ? Value::str(asciiOf(r.s)) : r;
    }
    const char *method = conversion == 's' ? "__str__" : "__repr__";
    if (userMethod(v, method) || (conversion == 's' && userMethod(v, "__repr__")))
        return callUserMethod(v, userMethod(v, method) ? method : "__repr__", {}, at);
    if (conversion == 's') return Value::str(str(v));
    std::string r = exactRepr(v);
    return Value::str(conversion == 'a' ? asciiOf(r) : r);
}

Value InterpImpl::format(const Value &v, const std::string &spec, const SourceRange &at) {
    if (v.is(VK::Poison) || v.is(VK::Opaque)) return v;
    if (userMethod(v, "__format__")) return callUserMethod(v, "__format__", {Value::str(spec)}, at);
    if (spec.empty()) return strOf(v, 's', at);
    Value x = v.is(VK::Instance) && v.as<InstanceObj>().cls->isEnum() ? plainValue(v) : v;
    Spec sp;
    std::string err = parseSpec(spec, sp), out;
    if (err.empty()) {
        switch (x.kind) {
        case VK::Bool:
        case VK::Int: out = formatInt(x.is(VK::Bool) ? int64_t(x.b) : x.i, sp, err); break;
        case VK::Float: out = formatFloat(x.f, sp, false, err); break;
        case VK::Str: out = formatStr(x.s, sp, err); break;
        case VK::DType: out = formatStr(std::string(x.dtype.name()), sp, err); break;
        default:
            if (isRuntime(x)) failRuntime(at, "a value formatted into a string");
            failPython("TypeError", at, std::string("unsupported format string passed to ") + typeName(x.kind) + ".__format__");
        }
    }
    if (!err.empty()) failPython("ValueError", at, err);
    charge((int64_t)out.size());
    return Value::str(std::move(out));
}

Value InterpImpl::evalJoinedStr(const ast::Expr &e) {
    std::string out;
    for (auto &part : e.elts) {
        Value v;
        if (part->kind == ast::ExprKind::Str) {
            v = Value::str(part->str);
        } else {
            v = eval(*part->a);
            if (isRuntime(v)) failRuntime(part->a->range, "a value formatted into a string");
            if (!part->str.empty()) v = strOf(v, part->str[0], part->a->range);
            Value spec = part->b ? evalJoinedStr(*part->b) : Value::str("");
            if (spec.is(VK::Poison) || spec.is(VK::Opaque)) return spec;
            v = format(v, spec.s, part->range);
        }
        if (v.is(VK::Poison)) return v;
        if (v.is(VK::Opaque)) return v;
        if (!v.is(VK::Str)) fail(part->range, std::string("__format__ must return a str, not ") + typeName(v.kind));
        out += v.s;
        if ((int64_t)out.size() > kMaxFormatted) fail(e.range, "this string is too large for compile-time evaluation");
    }
    return Value::str(std::move(out));
}

Value InterpImpl::strFormat(const std::string &fmt, CallArgs &a) {
    size_t next = 0;
    bool manual = false, automatic = false;
    // One field's value: `name` is "" (the next positional), digits, or an identifier, then .attr / [key].
    auto lookup = [&](std::string_view name) -> Value {
        size_t i = 0;
        while (i < name.size() && name[i] != '.' && name[i] != '[') ++i;
        std::string_view head = name.substr(0, i);
        Value v;
        if (head.empty() || std::isdigit((unsigned char)head[0])) {
            (head.empty() ? automatic : manual) = true;
            if (manual && automatic) failPython("ValueError", a.call, "cannot switch between automatic field numbering and manual field specification");
            size_t k = head.empty() ? next++ : size_t(std::stoll(std::string(head.substr(0, 9))));
            if (k >= a.pos.size())
                failPython("IndexError", a.call, "Replacement index " + std::to_string(k) + " out of range for positional args tuple");
            v = a.pos[k].value;
        } else {
            auto it = std::find_if(a.kw.begin(), a.kw.end(), [&](auto &kv) { return kv.first == head; });
            if (it == a.kw.end()) failPython("KeyError", a.call, "'" + std::string(head) + "'");
            v = it->second.value;
        }
        while (i < name.size()) {
            size_t j = name.find_first_of(".[", i + 1);
            if (name[i] == '.') {
                v = attributeOf(v, std::string(name.substr(i + 1, j == npos ? npos : j - i - 1)), a.call);
                i = j == npos ? name.size() : j;
                continue;
            }
            size_t close = name.find(']', i);
            if (close == npos) failPython("ValueError", a.call, "Missing ']' in format string");
            std::string key(name.substr(i + 1, close - i - 1));
            bool digits = !key.empty() && key.find_first_not_of("0123456789") == npos;
            v = getItem(v, digits ? Value::integer(std::stoll(key.substr(0, 18))) : Value::str(key), a.call);
            i = close + 1;
        }
        return v;
    };
    // Expands `text` (the format string, or a field's spec with its nested fields).
    auto expand = [&](std::string_view text, int depth, auto &self) -> std::string {
        std::string out;
        for (size_t i = 0; i < text.size(); ++i) {
            char c = text[i];
            if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
                out += c;
                ++i;
                continue;
            }
            if (c == '}') failPython("ValueError", a.call, "Single '}' encountered in format string");
            if (c != '{') {
                out += c;
                continue;
            }
            size_t j = i + 1;
            for (int nest = 0; j < text.size() && (nest || text[j] != '}'); ++j) nest += text[j] == '{' ? 1 : text[j] == '}' ? -1 : 0;
            if (j >= text.size()) failPython("ValueError", a.call, "expected '}' before end of string");
            if (depth > 1) failPython("ValueError", a.call, "Max string recursion exceeded");
            std::string_view field = text.substr(i + 1, j - i - 1);
            size_t colon = std::min(field.find(':'), field.size()), bang = std::min(field.find('!'), colon);
            Value v = lookup(field.substr(0, bang));
            if (bang < colon) {
                std::string_view conv = field.substr(bang + 1, colon - bang - 1);
                if (conv.size() != 1 || !std::strchr("sra", conv[0]))
                    failPython("ValueError", a.call, "Unknown conversion specifier " + std::string(conv));
                v = strOf(v, conv[0], a.call);
            }
            std::string spec = colon < field.size() ? self(field.substr(colon + 1), depth + 1, self) : "";
            Value f = format(v, spec, a.call);
            if (!f.is(VK::Str)) throw NotAString{f};
            out += f.s;
            if ((int64_t)out.size() > kMaxFormatted) fail(a.call, "this string is too large for compile-time evaluation");
            i = j;
        }
        return out;
    };
    try {
        return Value::str(expand(fmt, 0, expand));
    } catch (const NotAString &o) {
        return o.value;
    }
}

} // namespace tilec::eval
