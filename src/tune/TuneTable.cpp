/// \file
/// The tuning table (include/tilec/Tune.h): its JSON form, the file hash, the choice per bucket and the
/// differences from the build at hand.
#include "tilec/Tune.h"

#include "support/Json.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <set>
#include <stdexcept>

namespace tilec::tune {

namespace {

constexpr int kFormat = 1;

json::Value configJson(const Config &c) {
    json::Value o = json::Value::object();
    for (auto &[k, v] : c) o.set(k, json::Value::string(v));
    return o;
}

Config configFrom(const json::Value &v) {
    if (v.kind != json::Value::Object) throw std::invalid_argument("'config' is not an object");
    Config c;
    for (auto &[k, x] : v.members) c.emplace_back(k, x.asString("config value"));
    return c;
}

int intOf(const json::Value &o, const char *key) {
    const json::Value *v = o.find(key);
    return v && v->kind == json::Value::Number ? (int)v->num : 0;
}

std::string stringOf(const json::Value &o, const char *key) {
    const json::Value *v = o.find(key);
    return v && v->kind == json::Value::String ? v->str : "";
}

/// Targets' compute capability digits: "sm_90a" -> "90".
std::string ccOf(const std::string &arch) {
    std::string d;
    for (char c : arch)
        if (std::isdigit((unsigned char)c)) d += c;
    return d;
}

} // namespace

std::string fileHash(const std::string &bytes) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
    return buf;
}

std::string writeTable(const Table &t) {
    using json::Value;
    Value env = Value::object();
    env.set("gpu", Value::string(t.env.gpuName))
        .set("sm_count", Value::number(t.env.smCount))
        .set("compute_capability", Value::string(std::to_string(t.env.ccMajor) + "." + std::to_string(t.env.ccMinor)))
        .set("driver_version", Value::number(t.env.driverVersion))
        .set("nvrtc_version", Value::string(t.env.nvrtcVersion))
        .set("sm_clock_khz", Value::number(t.env.smClockKHz))
        .set("memory_clock_khz", Value::number(t.env.memoryClockKHz))
        .set("tilec_version", Value::string(t.env.tilecVersion));
    Value archs = Value::array();
    for (auto &a : t.archs) archs.items.push_back(Value::string(a));
    Value results = Value::array();
    for (auto &r : t.results) {
        Value o = Value::object();
        o.set("config", configJson(r.config));
        if (!r.size.empty()) {
            Value s = Value::object();
            for (auto &[k, v] : r.size) s.set(k, Value::number((double)v));
            o.set("size", s);
        }
        o.set("status", Value::string(r.status));
        if (r.status == "ok") o.set("ms", Value::number(r.ms));
        if (!r.detail.empty()) o.set("detail", Value::string(r.detail));
        results.items.push_back(o);
    }
    Value best = Value::array();
    try {
        for (auto &c : selectBest(t)) {
            Value o = Value::object();
            if (c.upTo) o.set("up_to", Value::number((double)*c.upTo));
            o.set("config", configJson(c.config)).set("ms", Value::number(c.ms));
            best.items.push_back(o);
        }
    } catch (const std::invalid_argument &) {
        // No working configuration: the table still records every failure.
    }
    Value root = Value::object();
    root.set("tilec_tune_format", Value::number(kFormat))
        .set("file", Value::string(t.file))
        .set("file_hash", Value::string(t.fileHash))
        .set("kernel", Value::string(t.kernel))
        .set("call", Value::string(t.call))
        .set("arch", archs)
        .set("environment", env)
        .set("space", Value::string(t.space))
        .set("dispatch_symbol", Value::string(t.dispatchSymbol))
        .set("seed", Value::number((double)t.seed))
        .set("warmup", Value::number(t.warmup))
        .set("reps", Value::number(t.reps))
        .set("seconds", Value::number(t.seconds))
        .set("best", best)
        .set("results", results);
    return json::write(root);
}

Table readTable(const std::string &text) {
    json::Value root = json::parse(text);
    if (root.kind != json::Value::Object) throw std::invalid_argument("not a JSON object");
    const json::Value *format = root.find("tilec_tune_format");
    if (!format) throw std::invalid_argument("not a tilec tune table (no 'tilec_tune_format')");
    if (format->asNumber("tilec_tune_format") != kFormat)
        throw std::invalid_argument("table format " + std::to_string((int)format->num) + "; this tilec reads " +
                                    std::to_string(kFormat));
    Table t;
    t.file = stringOf(root, "file");
    t.fileHash = root.at("file_hash").asString("file_hash");
    t.kernel = root.at("kernel").asString("kernel");
    t.call = stringOf(root, "call");
    for (auto &a : root.at("arch").asArray("arch")) t.archs.push_back(a.asString("arch"));
    if (const json::Value *env = root.find("environment")) {
        t.env.gpuName = stringOf(*env, "gpu");
        t.env.smCount = intOf(*env, "sm_count");
        std::string cc = stringOf(*env, "compute_capability");
        if (auto dot = cc.find('.'); dot != std::string::npos) {
            t.env.ccMajor = std::atoi(cc.substr(0, dot).c_str());
            t.env.ccMinor = std::atoi(cc.substr(dot + 1).c_str());
        }
        t.env.driverVersion = intOf(*env, "driver_version");
        t.env.nvrtcVersion = stringOf(*env, "nvrtc_version");
        t.env.smClockKHz = intOf(*env, "sm_clock_khz");
        t.env.memoryClockKHz = intOf(*env, "memory_clock_khz");
        t.env.tilecVersion = stringOf(*env, "tilec_version");
    }
    t.space = stringOf(root, "space");
    t.dispatchSymbol = stringOf(root, "dispatch_symbol");
    t.warmup = intOf(root, "warmup");
    t.reps = intOf(root, "reps");
    if (const json::Value *s = root.find("seed"); s && s->kind == json::Value::Number) t.seed = (uint64_t)s->num;
    if (const json::Value *s = root.find("seconds"); s && s->kind == json::Value::Number) t.seconds = s->num;
    for (auto &r : root.at("results").asArray("results")) {
        Result x;
        x.config = configFrom(r.at("config"));
        if (const json::Value *s = r.find("size"))
            for (auto &[k, v] : s->members) x.size[k] = (int64_t)v.asNumber("size");
        x.status = r.at("status").asString("status");
        if (x.status == "ok") x.ms = r.at("ms").asNumber("ms");
        x.detail = stringOf(r, "detail");
        if (!t.dispatchSymbol.empty() && !x.size.count(t.dispatchSymbol))
            throw std::invalid_argument("a result has no size for the dispatch symbol '" + t.dispatchSymbol + "'");
        t.results.push_back(std::move(x));
    }
    return t;
}

std::vector<Choice> selectBest(const Table &t) {
    // The sizes of the dispatch symbol, increasing; one pseudo-size without one.
    std::set<int64_t> sizes;
    const bool dispatch = !t.dispatchSymbol.empty();
    for (auto &r : t.results) sizes.insert(dispatch ? r.size.at(t.dispatchSymbol) : 0);
    if (sizes.empty()) throw std::invalid_argument("the table holds no results");
    std::vector<Choice> out;
    for (int64_t s : sizes) {
        const Result *best = nullptr;
        for (auto &r : t.results) {
            if (r.status != "ok" || (dispatch && r.size.at(t.dispatchSymbol) != s)) continue;
            if (!best || r.ms < best->ms) best = &r; // ties: the earlier configuration
        }
        if (!best)
            throw std::invalid_argument(dispatch ? "no configuration worked at " + t.dispatchSymbol + "=" + std::to_string(s)
                                                 : std::string("no configuration worked"));
        Choice c;
        if (dispatch) c.upTo = s;
        c.config = best->config;
        c.ms = best->ms;
        out.push_back(std::move(c));
    }
    if (dispatch) out.back().upTo.reset(); // the last bucket takes every larger size too
    return out;
}

std::optional<Config> singleBest(const Table &t) {
    std::vector<Config> configs;
    for (auto &r : t.results)
        if (std::find(configs.begin(), configs.end(), r.config) == configs.end()) configs.push_back(r.config);
    std::set<std::map<std::string, int64_t>> sizes;
    for (auto &r : t.results) sizes.insert(r.size);
    std::optional<Config> best;
    double bestTotal = std::numeric_limits<double>::infinity();
    for (auto &c : configs) {
        double total = 0;
        size_t ran = 0;
        for (auto &r : t.results)
            if (r.config == c && r.status == "ok") total += r.ms, ++ran;
        if (ran == sizes.size() && total < bestTotal) bestTotal = total, best = c;
    }
    return best;
}

std::vector<std::string> mismatches(const Table &t, const std::string &fileBytes, const std::vector<std::string> &archs) {
    std::vector<std::string> out;
    std::string h = fileHash(fileBytes);
    if (h != t.fileHash)
        out.push_back("the table was made from another version of " + (t.file.empty() ? "the file" : t.file) +
                      " (hash " + t.fileHash + ", now " + h + "): the configurations may no longer be the best");
    std::string tuned = std::to_string(t.env.ccMajor) + std::to_string(t.env.ccMinor);
    bool targeted = std::any_of(archs.begin(), archs.end(), [&](const std::string &a) { return ccOf(a) == tuned; });
    if (t.env.ccMajor > 0 && !targeted) {
        std::string list;
        for (auto &a : archs) list += (list.empty() ? "" : ", ") + a;
        out.push_back("the table was tuned on " + t.env.gpuName + " (compute capability " + std::to_string(t.env.ccMajor) +
                      "." + std::to_string(t.env.ccMinor) + "), which no target of -arch (" + list +
                      ") is for: the configurations may be slow or not fit there");
    }
    return out;
}

} // namespace tilec::tune
