/// \file
/// `tilec FILE.tile --tuned NAME.tune.json` (include/tilec/Tune.h): each table's choice becomes `--export`s
/// of the kernel re-instantiated with the chosen configuration; a kernel tuned at several sizes becomes one
/// kernel per distinct chosen configuration (NAME__cfgK) behind a dispatcher named NAME.
#include "tilec/Tune.h"

#include "tilec/AST.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tilec::tune {

namespace {

std::string readText(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::invalid_argument("cannot open '" + path + "'");
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

Dispatch withPrefix(const Dispatch &d, const std::string &prefix) {
    Dispatch p = d;
    p.cName = prefix + d.cName;
    for (auto &c : p.cfgNames) c = prefix + c;
    return p;
}

} // namespace

TunedPlan planTunedBuild(const std::vector<std::string> &tablePaths, const ast::Module &m, const SourceManager &sm,
                         const std::string &fileBytes, const std::vector<std::string> &archs) {
    TunedPlan plan;
    std::vector<std::string> kernels;
    for (auto &path : tablePaths) {
        auto fail = [&](const std::string &why) { throw std::invalid_argument("--tuned " + path + ": " + why); };
        Table t;
        try {
            t = readTable(readText(path));
        } catch (const std::invalid_argument &e) {
            fail(e.what());
        }
        for (auto &k : kernels)
            if (k == t.kernel) fail("a second table for kernel '" + t.kernel + "'");
        kernels.push_back(t.kernel);
        auto inst = findInstantiation(m, sm, t.kernel);
        if (!inst) fail("the table is for kernel '" + t.kernel + "', which the file does not instantiate at module level");
        for (auto &w : mismatches(t, fileBytes, archs)) plan.warnings.push_back("--tuned " + path + ": " + w);
        std::vector<Choice> choices;
        try {
            choices = selectBest(t);
        } catch (const std::invalid_argument &e) {
            fail(e.what());
        }
        if (t.dispatchSymbol.empty()) {
            plan.exports.emplace_back(t.kernel, callText(*inst, choices.front().config));
            continue;
        }
        // One internal kernel per distinct configuration, numbered in the order of the buckets.
        Dispatch d;
        d.cName = t.kernel;
        d.symbol = t.dispatchSymbol;
        std::vector<Config> distinct;
        for (auto &c : choices) {
            size_t k = 0;
            while (k < distinct.size() && distinct[k] != c.config) ++k;
            if (k == distinct.size()) {
                distinct.push_back(c.config);
                plan.exports.emplace_back(configKernelName(t.kernel, k), callText(*inst, c.config));
            }
            d.cfgNames.push_back(configKernelName(t.kernel, k));
            d.upTo.push_back(c.upTo);
        }
        plan.replaced.push_back(t.kernel);
        plan.dispatches.push_back(std::move(d));
    }
    return plan;
}

void addDispatchers(const TunedPlan &p, const std::string &prefix, std::string *cuda, std::string &header) {
    std::string decls, defs;
    for (auto &d : p.dispatches) {
        Dispatch q = withPrefix(d, prefix);
        decls += dispatchDeclarations(q, header);
        defs += dispatchDefinitions(q, header, true);
    }
    if (p.dispatches.empty()) return;
    if (cuda) *cuda += defs;
    header = insertIntoHeader(header, decls);
}

std::string dispatchersInC(const TunedPlan &p, const std::string &prefix, const std::string &header) {
    std::string defs;
    for (auto &d : p.dispatches) defs += dispatchDefinitions(withPrefix(d, prefix), header, false);
    return defs;
}

} // namespace tilec::tune
