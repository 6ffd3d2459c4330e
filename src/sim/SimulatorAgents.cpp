/// \file
/// The simulator's warp-role agents and its happens-before model (src/sim/Simulator.h).
///
/// Agents. ir::WarpRoles runs each warpgroup of each role as an agent: a host thread of its own that holds a
/// baton, so exactly one agent (or the scheduler) runs at a time and the simulation stays deterministic for a
/// seed. An agent runs its role's code in lockstep over its 128 threads until it must wait (an mbarrier
/// phase, a barrier of several agents) or reaches a synchronisation point where the seeded scheduler may
/// switch (seed 0 never does: each agent runs until it blocks). The scheduler resumes a random ready agent,
/// lands a random outstanding TMA load now and then (always when no agent is ready), and reports a deadlock
/// when no agent is ready and nothing is in flight.
///
/// Happens-before. Each component (the block outside roles, each agent, each TMA load) has a vector clock.
/// An agent's clock advances when it releases (an mbarrier arrival, a barrier arrival); waits acquire what
/// was released. Every shared element remembers its last write and each component's last read; an access is
/// a race unless the earlier one is known to the accessing component (or, among the threads of one
/// component, unless a barrier of that component separates them).
#include "sim/Simulator.h"
#include "sim/SharedAliasBytes.h"

#include "tilec/SharedMemory.h"
#include "tilec/SharedAliases.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace tilec::simtest {

std::string Simulator::who(int comp, int t) const {
    std::string s = comps_.at((size_t)comp).name;
    if (t >= 0) s += ", thread " + std::to_string(t);
    return s;
}

bool Simulator::ordered(const Access &a, int t, const Clock *knows) const {
    if (a.comp < 0) return true;
    const Comp &c = comps_[(size_t)cur_];
    if (a.comp == cur_) return a.epoch != c.epoch || a.thread == t || partiallyOrdered(a, t);
    return a.clock <= (knows ? *knows : c.clock).at((size_t)a.comp);
}

bool Simulator::partiallyOrdered(const Access &a, int t) const {
    if (a.comp != 0 || t < 0) return false;
    // Several threads read it (thread -2): each of lo..hi must have passed a barrier that t passed after it
    // (the latest of those reads is `partial`'s).
    const int lo = a.thread == -2 ? a.lo : a.thread, hi = a.thread == -2 ? a.hi : a.thread;
    if (lo < 0 || hi < lo) return false;
    for (size_t p = (size_t)a.partial; p < partials_.size(); ++p) {
        const std::vector<char> &m = partials_[p];
        if (m[(size_t)t] && std::all_of(m.begin() + lo, m.begin() + hi + 1, [](char c) { return c != 0; })) return true;
    }
    return false;
}

namespace {

/// The bytes of the shared aliases of one simulator's kernel (sim/SharedAliasBytes.h): the buffers over the same
/// bytes on purpose (an alias, its base and the base's other aliases), each element's latest write numbered.
struct AliasBytes {
    std::map<const ir::BufferNode *, std::vector<const ir::BufferNode *>> partners;
    std::map<const ir::BufferNode *, std::vector<uint64_t>> seq;
    uint64_t writes = 0;

    /// Element i of b from the latest write of each of its bytes: its own, or a partner's covering it.
    template <class SharedByte>
    void refresh(const ir::BufferNode *b, size_t i, std::map<const ir::BufferNode *, std::vector<double>> &values,
                 SharedByte sharedByte) {
        struct Source {
            uint64_t seq;
            const ir::BufferNode *buf;
            size_t at;
        };
        const int64_t eb = b->dtype.bytes(), lo = sharedByte(b, (int64_t)i);
        std::vector<Source> from((size_t)eb, Source{seq.at(b)[i], b, i});
        bool other = false;
        for (const ir::BufferNode *o : partners.at(b)) {
            std::vector<uint64_t> &os = seq[o];
            if (os.size() != values.at(o).size()) os.assign(values.at(o).size(), 0);
            const int64_t base = sharedByte(o, 0), ob = o->dtype.bytes(), n = (int64_t)os.size();
            for (int64_t j = std::max<int64_t>(0, (lo - base) / ob); j < n && base + j * ob < lo + eb; ++j)
                for (int64_t p = std::max(lo, base + j * ob); p < std::min(lo + eb, base + (j + 1) * ob); ++p)
                    if (Source &s = from[(size_t)(p - lo)]; os[(size_t)j] > s.seq) s = {os[(size_t)j], o, (size_t)j}, other = true;
        }
        if (!other) return;
        uint64_t bits = 0;
        for (int64_t p = 0; p < eb; ++p) {
            const Source &s = from[(size_t)p];
            const int64_t k = lo + p - sharedByte(s.buf, (int64_t)s.at); // the byte's place in its source element
            bits |= (elementBits(s.buf->dtype, values.at(s.buf)[s.at]) >> (8 * k) & 0xFF) << (8 * p);
        }
        values.at(b)[i] = elementOfBits(b->dtype, bits);
    }
};

/// Each simulator's AliasBytes (planAliases resets it when a run starts; a simulator runs one agent at a time).
AliasBytes *aliasBytesOf(const Simulator *s) {
    static std::mutex m;
    static std::map<const Simulator *, std::unique_ptr<AliasBytes>> all;
    std::lock_guard<std::mutex> lock(m);
    auto &p = all[s];
    if (!p) p = std::make_unique<AliasBytes>();
    return p.get();
}

} // namespace

void Simulator::touch(const ir::BufferNode *b, size_t i, int t, bool write) { touchAs(cur_, b, i, t, write); }

void Simulator::touchAs(int comp, const ir::BufferNode *b, size_t i, int t, bool write, const Clock *knows) {
    if (b->scope != ir::Scope::Shared) return;
    if (write) ++sharedStores_[b];
    AliasBytes *bytes = aliasBytesOf(this);
    auto declared = bytes->partners.find(b);
    if (declared != bytes->partners.end()) {
        std::vector<uint64_t> &seq = bytes->seq[b];
        if (seq.size() != shared_.at(b).size()) seq.assign(shared_.at(b).size(), 0);
        if (write) seq.at(i) = ++bytes->writes;
        else bytes->refresh(b, i, shared_, [&](const ir::BufferNode *x, int64_t j) { return sharedByte(x, j); });
    }
    touchOne(comp, b, i, t, write, knows, nullptr);
    // An access to b is also one to the bytes of every buffer planned over them: it must be ordered after their
    // accesses as after b's own (each buffer records only its own, so that one buffer's element covering two of
    // the other's is not two writes).
    forAliased(b, i, [&](const ir::BufferNode *o, size_t j) {
        touchOne(comp, o, j, t, write, knows, b);
        const bool alias = declared != bytes->partners.end() && std::count(declared->second.begin(), declared->second.end(), o);
        if (write && !alias) shared_.at(o)[j] = std::nan(""); // the bytes now hold b's element, not o's
    });
}

void Simulator::planAliases() {
    aliases_.clear();
    AliasBytes &bytes = *aliasBytesOf(this);
    bytes = AliasBytes{};
    for (auto &[v, base] : ir::sharedAliases(k_)) { // each with its base and the base's other aliases
        if (!k_.shared.offsetOf(v.get())) continue; // (dropped: unused)
        bytes.partners[base.get()].push_back(v.get());
        for (auto &[w, wb] : ir::sharedAliases(k_))
            if (wb == base && w != v && k_.shared.offsetOf(w.get())) bytes.partners[v.get()].push_back(w.get());
        bytes.partners[v.get()].push_back(base.get());
    }
    std::vector<std::pair<const ir::BufferNode *, int64_t>> placed;
    for (auto &b : k_.allocs)
        if (b->scope == ir::Scope::Shared)
            if (auto off = k_.shared.offsetOf(b.get())) placed.push_back({b.get(), *off});
    for (auto &[a, ao] : placed)
        for (auto &[b, bo] : placed)
            if (a != b && ao < bo + smem::sharedBytes(b) && bo < ao + smem::sharedBytes(a)) aliases_[a].push_back(b);
}

void Simulator::forAliased(const ir::BufferNode *b, size_t i, const std::function<void(const ir::BufferNode *, size_t)> &f) {
    auto it = aliases_.find(b);
    if (it == aliases_.end()) return;
    const int64_t lo = sharedByte(b, (int64_t)i), hi = lo + b->dtype.bytes();
    for (const ir::BufferNode *o : it->second) {
        const int64_t base = sharedByte(o, 0), eb = o->dtype.bytes(), n = (int64_t)shared_.at(o).size();
        for (int64_t j = std::max<int64_t>(0, (lo - base) / eb); j < n && base + j * eb < hi; ++j)
            if (base + (j + 1) * eb > lo) f(o, (size_t)j);
    }
}

void Simulator::touchOne(int comp, const ir::BufferNode *b, size_t i, int t, bool write, const Clock *knows,
                         const ir::BufferNode *via) {
    const int saved = cur_;
    cur_ = comp;
    Touch &x = touches_.at(b)[i];
    auto report = [&](const char *what, const Access &other) {
        if (races.size() < 5)
            races.push_back(std::string(what) + " on " + b->name + "[" + std::to_string(i) + "]" +
                            (via ? " (through " + via->name + ", planned over the same shared bytes)" : "") + " by " +
                            who(comp, t) + " after " + who(other.comp, other.thread) +
                            (other.thread == -2 ? ", threads " + std::to_string(other.lo) + ".." + std::to_string(other.hi) : ""));
    };
    if (!ordered(x.w, t, knows) && !(write && sameValueWrite_ && !via))
        report(write ? "write-after-write" : "read-after-write", x.w);
    if (write)
        for (auto &r : x.r)
            if (!ordered(r, t)) {
                report("write-after-read", r);
                break;
            }
    if (via) { // checked against the other buffer's own accesses only (they may cover part of its element)
        cur_ = saved;
        return;
    }
    const Comp &c = comps_[(size_t)comp];
    const Access now{comp, t, c.epoch, c.clock.at((size_t)comp), (int64_t)partials_.size()};
    if (write) {
        x.w = now;
        x.r.clear();
    } else {
        // One entry per component, except that the block's reads on either side of a named barrier of some of
        // its threads stay apart: merged, the older ones would seem to need a barrier after the newer ones (a
        // thread's own write after its read then looked like a race with the threads that read before the
        // barrier). Entries of an earlier epoch are ordered for every thread: they go.
        if (comp == 0)
            x.r.erase(std::remove_if(x.r.begin(), x.r.end(), [&](const Access &r) { return r.comp == 0 && r.epoch != now.epoch; }),
                      x.r.end());
        auto it = std::find_if(x.r.begin(), x.r.end(),
                               [&](const Access &r) { return r.comp == comp && (comp != 0 || r.partial == now.partial); });
        if (it == x.r.end()) x.r.push_back(now);
        else {
            bool several = it->epoch == now.epoch && it->clock == now.clock && it->thread != t;
            const int lo = it->thread == -2 ? it->lo : it->thread, hi = it->thread == -2 ? it->hi : it->thread;
            *it = now;
            if (several) {
                it->thread = -2;
                it->lo = std::min(lo, t), it->hi = std::max(hi, t);
            }
        }
    }
    cur_ = saved;
}

void Simulator::release(Clock &into) {
    Comp &c = comps_[(size_t)cur_];
    into.join(c.clock);
    c.clock.set((size_t)cur_, c.clock.at((size_t)cur_) + 1);
}

void Simulator::acquire(const Clock &from) { comps_[(size_t)cur_].clock.join(from); }

bool Simulator::wholeScope(const std::vector<char> &mask) const {
    if (!agent_) return std::count(mask.begin(), mask.end(), 1) == T_;
    return mask == agent_->mask;
}

/// One agent's arrival, with all of its threads, at a barrier of several agents for `threads` threads: what it
/// did before is released to the barrier's current generation. Returns that generation, or -1 when this
/// arrival completed it.
int64_t Simulator::arriveAt(int64_t key, int threads, const std::vector<char> &mask, const char *what) {
    if (!wholeScope(mask)) throw SimError(std::string(what) + " in divergent code (reached by only some threads of " + comps_[(size_t)cur_].name + ")");
    GroupBarrier &g = groupBarriers_[key];
    g.arrived += agent_->count;
    release(g.gathered);
    ++comps_[(size_t)cur_].epoch;
    if (g.arrived > threads) throw SimError(std::string(what) + " for " + std::to_string(threads) + " threads reached by " + std::to_string(g.arrived));
    if (g.arrived < threads) return g.generation;
    g.released = g.gathered;
    g.gathered = Clock{};
    g.arrived = 0;
    ++g.generation;
    return -1;
}

/// A barrier of several agents (the role's __syncthreads, a named barrier's bar.sync): `threads` threads must
/// arrive, each agent with all of its threads.
void Simulator::groupBarrier(int64_t key, int threads, const std::vector<char> &mask, const char *what) {
    const int64_t gen = arriveAt(key, threads, mask, what);
    if (gen >= 0)
        waitUntil([this, key, gen] { return groupBarriers_[key].generation > gen; }, [this, key, threads, what] {
            return std::string(what) + " (" + std::to_string(groupBarriers_[key].arrived) + " of " + std::to_string(threads) + " threads arrived)";
        });
    acquire(groupBarriers_[key].released);
}

/// bar.arrive: an arrival that does not wait (it releases, and acquires nothing).
void Simulator::groupArrive(int64_t key, int threads, const std::vector<char> &mask) {
    arriveAt(key, threads, mask, "bar.arrive");
}

void Simulator::roles(const ir::WarpRoles &r, const std::vector<char> &mask) {
    if (agent_) throw SimError("warp roles inside warp roles");
    if (std::count(mask.begin(), mask.end(), 1) != T_) throw SimError("warp roles reached by only some threads");
    if (r.consumerThreads + r.producerThreads != T_) throw SimError("the roles' threads differ from the launched threads");
    // setmaxnreg is a no-op here; it is legal only when every warpgroup runs it uniformly: each role a whole
    // number of warpgroups, counts of 24..256 in steps of 8. Without it (sm_90) a role is whole warps.
    for (auto [threads, regs] : {std::pair{r.consumerThreads, r.consumerRegs}, std::pair{r.producerThreads, r.producerRegs}}) {
        if (threads % 32) throw SimError("a warp role of " + std::to_string(threads) + " threads is not whole warps");
        if ((r.consumerRegs || r.producerRegs) && threads % 128)
            throw SimError("a warp role of " + std::to_string(threads) + " threads is not whole warpgroups (setmaxnreg is per warpgroup)");
        if (regs && (regs < 24 || regs > 256 || regs % 8)) throw SimError("setmaxnreg " + std::to_string(regs) + " outside 24..256 in steps of 8");
    }
    roleFirst_[0] = 0, roleCount_[0] = r.consumerThreads;
    roleFirst_[1] = r.consumerThreads, roleCount_[1] = r.producerThreads;
    Comp &block = comps_[0];
    Clock forked = block.clock;
    forked.set(0, block.clock.at(0) - 1); // the block's accesses since its last barrier are unordered
    agents_.clear();
    for (int role = 0; role < 2; ++role)
        for (int w = 0; w * 128 < roleCount_[role]; ++w) { // warpgroups (a role of one warp: that warp)
            auto a = std::make_unique<Agent>();
            a->role = role;
            a->first = roleFirst_[role] + w * 128;
            a->count = std::min(128, roleCount_[role] - w * 128);
            a->mask.assign((size_t)T_, 0);
            std::fill(a->mask.begin() + a->first, a->mask.begin() + a->first + a->count, 1);
            a->body = role == 0 ? r.consumer : r.producer;
            a->comp = (int)comps_.size();
            comps_.push_back(Comp{});
            comps_.back().name = std::string(role == 0 ? "consumer" : "producer") + (a->count == 128 ? " warpgroup " : " warps ") +
                                 std::to_string(w) + " (threads " + std::to_string(a->first) + ".." + std::to_string(a->first + a->count - 1) + ")";
            comps_.back().clock = forked;
            comps_.back().clock.set((size_t)a->comp, 0);
            agents_.push_back(std::move(a));
        }
    abort_ = false;
    running_ = -1;
    // Each agent runs on a thread of its own: it takes the scalar semantics' settings of the thread that runs
    // the kernel (NarrowRounding is thread_local: without this, a warp role's float16 casts kept float32 precision).
    const bool narrow = narrowFloatRounding();
    for (size_t i = 0; i < agents_.size(); ++i)
        agents_[i]->thread = std::thread([this, i, narrow] {
            NarrowRounding same(narrow);
            agentMain(*agents_[i], (int)i);
        });
    try {
        schedule();
    } catch (...) {
        stopAgents();
        throw;
    }
    stopAgents();
    // bar.arrive without the bar.sync it pairs with: the next use of the barrier id would complete early
    for (auto &[key, g] : groupBarriers_)
        if (g.arrived) throw SimError("the warp roles ended with " + std::to_string(g.arrived) + " threads arrived at named barrier " + std::to_string(key) + " and no one to complete it");
    cur_ = 0;
    for (size_t c = 1; c < comps_.size(); ++c) comps_[0].clock.join(comps_[c].clock);
    ++comps_[0].epoch;
    comps_[0].clock.set(0, comps_[0].clock.at(0) + 1);
}

void Simulator::agentMain(Agent &a, int index) {
    {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return running_ == index || abort_; });
    }
    try {
        if (!abort_) exec(a.body, a.mask);
    } catch (const Abort &) {
    } catch (...) {
        a.error = std::current_exception();
    }
    std::unique_lock<std::mutex> l(mu_);
    a.finished = true;
    running_ = -1;
    cv_.notify_all();
}

void Simulator::resume(int index) {
    Agent &a = *agents_[(size_t)index];
    agent_ = &a;
    cur_ = a.comp;
    ++agentSwitches;
    std::unique_lock<std::mutex> l(mu_);
    running_ = index;
    cv_.notify_all();
    cv_.wait(l, [&] { return running_ == -1; });
    agent_ = nullptr;
    cur_ = 0;
}

void Simulator::yieldToScheduler() {
    const int self = (int)(std::find_if(agents_.begin(), agents_.end(), [&](auto &a) { return a.get() == agent_; }) - agents_.begin());
    Agent *me = agent_;
    std::unique_lock<std::mutex> l(mu_);
    running_ = -1;
    cv_.notify_all();
    cv_.wait(l, [&] { return running_ == self || abort_; });
    if (abort_) throw Abort{};
    agent_ = me;
    cur_ = me->comp;
}

void Simulator::waitUntil(std::function<bool()> ready, std::function<std::string()> what) {
    if (!agent_) {
        if (!ready()) throw SimError("deadlock: the block waits on " + what() + " outside warp roles");
        return;
    }
    while (!ready()) {
        agent_->ready = ready;
        agent_->waiting = what;
        yieldToScheduler();
    }
    agent_->ready = nullptr;
    agent_->waiting = nullptr;
}

/// A point where another agent may run first (never with seed 0).
void Simulator::maybeSwitch() {
    if (agent_ && seed_ && rng_() % 3 == 0) yieldToScheduler();
}

void Simulator::schedule() {
    for (;;) {
        std::vector<int> ready;
        bool live = false;
        for (size_t i = 0; i < agents_.size(); ++i) {
            Agent &a = *agents_[i];
            if (a.error) std::rethrow_exception(a.error);
            if (a.finished) continue;
            live = true;
            if (!a.ready || a.ready()) ready.push_back((int)i);
        }
        std::vector<size_t> inFlight;
        for (size_t i = 0; i < tma_.size(); ++i)
            if (!tma_[i].landed) inFlight.push_back(i);
        if (!live) {
            for (size_t i : inFlight) land(tma_[i]); // loads nobody waits for still land before the block ends
            return;
        }
        if (!inFlight.empty() && (ready.empty() || (seed_ && rng_() % 4 == 0))) {
            land(tma_[inFlight[seed_ ? rng_() % inFlight.size() : 0]]);
            continue;
        }
        if (ready.empty()) {
            std::string msg = "deadlock: every agent waits";
            for (auto &a : agents_)
                if (!a->finished) msg += "; " + comps_[(size_t)a->comp].name + " waits on " + a->waiting();
            throw SimError(msg);
        }
        resume(ready[seed_ ? rng_() % ready.size() : 0]);
    }
}

void Simulator::stopAgents() {
    {
        std::unique_lock<std::mutex> l(mu_);
        abort_ = true;
        cv_.notify_all();
    }
    for (auto &a : agents_)
        if (a->thread.joinable()) a->thread.join();
    agents_.clear();
    agent_ = nullptr;
}

} // namespace tilec::simtest
