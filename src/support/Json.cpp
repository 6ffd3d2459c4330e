/// \file
/// tilec's JSON (src/support/Json.h): a writer with a stable layout, a compact one, and a strict recursive-descent
/// reader.
#include "support/Json.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tilec::json {

Value::Value() = default;
Value::Value(const Value &) = default;
Value::Value(Value &&) noexcept = default;
Value &Value::operator=(const Value &) = default;
Value &Value::operator=(Value &&) noexcept = default;
Value::~Value() = default;

Value Value::string(std::string s) {
    Value v;
    v.kind = String;
    v.str = std::move(s);
    return v;
}
Value Value::number(double d) {
    Value v;
    v.kind = Number;
    v.num = d;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.kind = Bool;
    v.b = b;
    return v;
}
Value Value::array() {
    Value v;
    v.kind = Array;
    return v;
}
Value Value::object() {
    Value v;
    v.kind = Object;
    return v;
}

Value &Value::set(const std::string &key, Value v) {
    members.emplace_back(key, std::move(v));
    return *this;
}

const Value *Value::find(const std::string &key) const {
    for (auto &m : members)
        if (m.first == key) return &m.second;
    return nullptr;
}

const Value &Value::at(const std::string &key) const {
    const Value *v = kind == Object ? find(key) : nullptr;
    if (!v) throw std::invalid_argument("missing '" + key + "'");
    return *v;
}

const std::string &Value::asString(const char *what) const {
    if (kind != String) throw std::invalid_argument(std::string("'") + what + "' is not a string");
    return str;
}
double Value::asNumber(const char *what) const {
    if (kind != Number) throw std::invalid_argument(std::string("'") + what + "' is not a number");
    return num;
}
const std::vector<Value> &Value::asArray(const char *what) const {
    if (kind != Array) throw std::invalid_argument(std::string("'") + what + "' is not an array");
    return items;
}

namespace {

/// The length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when it is not one.
size_t utf8Length(const std::string &s, size_t i) {
    unsigned char c = s[i];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return 0;
    unsigned cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; k < n; ++k) {
        unsigned char d = s[i + k];
        if ((d >> 6) != 2) return 0;
        cp = cp << 6 | (d & 0x3F);
    }
    static const unsigned kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0;
    return n;
}

/// JSON text is UTF-8: bytes that are not (a diagnostic quoting a file with invalid UTF-8) become U+FFFD.
void quote(std::string &out, const std::string &s) {
    out += '"';
    for (size_t i = 0; i < s.size(); ++i) {
        unsigned char c = s[i];
        if (c >= 0x80) {
            size_t n = utf8Length(s, i);
            if (n == 0) out += "\xEF\xBF\xBD";
            else out.append(s, i, n), i += n - 1;
            continue;
        }
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default:
            if (c < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", c);
                out += buf;
            } else {
                out += (char)c;
            }
        }
    }
    out += '"';
}

std::string numberText(double d) {
    if (!std::isfinite(d)) return "null";
    if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string((long long)d);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", d);
    return buf;
}

bool scalar(const Value &v) { return v.kind != Value::Array && v.kind != Value::Object; }

/// `indent` < 0: compact (one line, no spaces).
void writeTo(std::string &out, const Value &v, int indent) {
    const bool compact = indent < 0;
    std::string pad(compact ? 0 : indent + 2, ' ');
    const char *space = compact ? "" : " ", *colon = compact ? ":" : ": ";
    const int inner = compact ? indent : indent + 2;
    switch (v.kind) {
    case Value::Null: out += "null"; break;
    case Value::Bool: out += v.b ? "true" : "false"; break;
    case Value::Number: out += numberText(v.num); break;
    case Value::String: quote(out, v.str); break;
    case Value::Array: {
        bool flat = true;
        for (auto &i : v.items) flat = flat && (compact || scalar(i));
        out += '[';
        for (size_t i = 0; i < v.items.size(); ++i) {
            out += i ? "," : "";
            out += flat ? (i ? space : "") : "\n" + pad;
            writeTo(out, v.items[i], inner);
        }
        if (!flat && !v.items.empty()) out += "\n" + std::string(indent, ' ');
        out += ']';
        break;
    }
    case Value::Object: {
        // An object of scalars and objects of scalars (a configuration, a result) stays on one line.
        bool flat = true;
        for (auto &m : v.members) {
            bool shallow = scalar(m.second);
            if (m.second.kind == Value::Object) {
                shallow = true;
                for (auto &n : m.second.members) shallow = shallow && scalar(n.second);
            }
            flat = flat && (compact || shallow);
        }
        out += '{';
        for (size_t i = 0; i < v.members.size(); ++i) {
            out += i ? "," : "";
            out += flat ? (i ? space : "") : "\n" + pad;
            quote(out, v.members[i].first);
            out += colon;
            writeTo(out, v.members[i].second, inner);
        }
        if (!flat && !v.members.empty()) out += "\n" + std::string(indent, ' ');
        out += '}';
        break;
    }
    }
}

class Reader {
  public:
    explicit Reader(const std::string &t) : t_(t) {}

    Value document() {
        Value v = value(0);
        space();
        if (i_ != t_.size()) fail("text after the JSON value");
        return v;
    }

  private:
    [[noreturn]] void fail(const std::string &what) {
        throw std::invalid_argument("JSON: " + what + " at offset " + std::to_string(i_));
    }
    void space() {
        while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
    }
    bool literal(const char *word) {
        size_t n = std::char_traits<char>::length(word);
        if (t_.compare(i_, n, word) != 0) return false;
        i_ += n;
        return true;
    }
    Value value(int depth) {
        if (depth > 64) fail("nesting too deep");
        space();
        if (i_ >= t_.size()) fail("unexpected end");
        char c = t_[i_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value::string(string());
        if (literal("true")) return Value::boolean(true);
        if (literal("false")) return Value::boolean(false);
        if (literal("null")) return Value();
        return Value::number(number());
    }
    Value object(int depth) {
        Value v = Value::object();
        ++i_;
        space();
        if (i_ < t_.size() && t_[i_] == '}') return ++i_, v;
        for (;;) {
            space();
            if (i_ >= t_.size() || t_[i_] != '"') fail("expected a key");
            std::string k = string();
            space();
            if (i_ >= t_.size() || t_[i_] != ':') fail("expected ':'");
            ++i_;
            v.set(k, value(depth + 1));
            space();
            if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
            if (i_ < t_.size() && t_[i_] == '}') { ++i_; return v; }
            fail("expected ',' or '}'");
        }
    }
    Value array(int depth) {
        Value v = Value::array();
        ++i_;
        space();
        if (i_ < t_.size() && t_[i_] == ']') return ++i_, v;
        for (;;) {
            v.items.push_back(value(depth + 1));
            space();
            if (i_ < t_.size() && t_[i_] == ',') { ++i_; continue; }
            if (i_ < t_.size() && t_[i_] == ']') { ++i_; return v; }
            fail("expected ',' or ']'");
        }
    }
    std::string string() {
        std::string s;
        ++i_;
        while (i_ < t_.size() && t_[i_] != '"') {
            char c = t_[i_++];
            if ((unsigned char)c < 0x20) fail("control character in a string");
            if (c != '\\') { s += c; continue; }
            if (i_ >= t_.size()) break;
            char e = t_[i_++];
            switch (e) {
            case '"': case '\\': case '/': s += e; break;
            case 'n': s += '\n'; break;
            case 't': s += '\t'; break;
            case 'r': s += '\r'; break;
            case 'b': s += '\b'; break;
            case 'f': s += '\f'; break;
            case 'u': {
                unsigned cp = hex4();
                // A surrogate pair is one code point; a lone surrogate becomes U+FFFD (UTF-8 cannot hold it).
                if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(i_, 2, "\\u") == 0) {
                    size_t at = i_;
                    i_ += 2;
                    unsigned lo = hex4();
                    if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    else i_ = at;
                }
                if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD;
                utf8(s, cp);
                break;
            }
            default: fail("unknown escape");
            }
        }
        if (i_ >= t_.size()) fail("unterminated string");
        ++i_;
        return s;
    }
    unsigned hex4() {
        if (i_ + 4 > t_.size()) fail("short \\u escape");
        unsigned cp = 0;
        for (int k = 0; k < 4; ++k) {
            char h = t_[i_++];
            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (d < 0) fail("bad \\u escape");
            cp = cp * 16 + (unsigned)d;
        }
        return cp;
    }
    static void utf8(std::string &s, unsigned cp) {
        if (cp < 0x80) {
            s += (char)cp;
        } else if (cp < 0x800) {
            s += (char)(0xC0 | (cp >> 6)), s += (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            s += (char)(0xE0 | (cp >> 12)), s += (char)(0x80 | ((cp >> 6) & 0x3F)), s += (char)(0x80 | (cp & 0x3F));
        } else {
            s += (char)(0xF0 | (cp >> 18)), s += (char)(0x80 | ((cp >> 12) & 0x3F));
            s += (char)(0x80 | ((cp >> 6) & 0x3F)), s += (char)(0x80 | (cp & 0x3F));
        }
    }
    double number() {
        size_t start = i_;
        if (i_ < t_.size() && (t_[i_] == '-' || t_[i_] == '+')) ++i_;
        while (i_ < t_.size() && (std::isdigit((unsigned char)t_[i_]) || t_[i_] == '.' || t_[i_] == 'e' ||
                                  t_[i_] == 'E' || t_[i_] == '-' || t_[i_] == '+'))
            ++i_;
        if (i_ == start) fail("unexpected character");
        try {
            size_t used = 0;
            double d = std::stod(t_.substr(start, i_ - start), &used);
            if (used != i_ - start) fail("malformed number");
            return d;
        } catch (const std::logic_error &) {
            i_ = start;
            fail("malformed number");
        }
    }

    const std::string &t_;
    size_t i_ = 0;
};

} // namespace

std::string write(const Value &v) {
    std::string out;
    writeTo(out, v, 0);
    return out + "\n";
}

std::string writeCompact(const Value &v) {
    std::string out;
    writeTo(out, v, -1);
    return out;
}

Value parse(const std::string &text) { return Reader(text).document(); }

} // namespace tilec::json
