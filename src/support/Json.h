/// \file
/// The little JSON tilec reads and writes (the tuning table, the language server's messages): objects keep
/// their key order, numbers are doubles, strings are UTF-8 with the standard escapes.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tilec::json {

struct Value {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<Value> items;                            ///< Array
    std::vector<std::pair<std::string, Value>> members;  ///< Object, in order

    // Defined where Value is complete: std::pair<std::string, Value> cannot be instantiated here (clang with
    // libstdc++ 12 rejects the implicit ones).
    Value();
    Value(const Value &);
    Value(Value &&) noexcept;
    Value &operator=(const Value &);
    Value &operator=(Value &&) noexcept;
    ~Value();

    static Value string(std::string s);
    static Value number(double d);
    static Value boolean(bool v);
    static Value array();
    static Value object();

    /// Object: appends a member (no check for repeats). Returns *this for chaining.
    Value &set(const std::string &key, Value v);
    /// Object: the member, or nullptr.
    const Value *find(const std::string &key) const;
    /// Object: the member; throws std::invalid_argument("missing 'key'") when absent.
    const Value &at(const std::string &key) const;
    /// Throw std::invalid_argument naming `what` when the kind differs.
    const std::string &asString(const char *what) const;
    double asNumber(const char *what) const;
    const std::vector<Value> &asArray(const char *what) const;
};

/// Two-space indented, one member per line; arrays of scalars on one line.
std::string write(const Value &v);
/// On one line, no spaces, no newline at the end (a JSON-RPC message).
std::string writeCompact(const Value &v);
/// Throws std::invalid_argument with the offset of the problem.
Value parse(const std::string &text);

} // namespace tilec::json
