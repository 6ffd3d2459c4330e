/// \file
/// The fatal-signal report of a campaign's worker (Crash.h). The handler uses only async-signal-safe calls.
#include "Crash.h"

#include <csignal>
#include <cstring>
#include <initializer_list>
#include <unistd.h>

namespace tilec::difffuzz {

namespace {

volatile std::sig_atomic_t haveSeed = 0;
volatile uint64_t currentSeed = 0;

void put(const char *s) {
    ssize_t ignored = ::write(2, s, std::strlen(s));
    (void)ignored;
}

void onFatal(int sig) {
    if (haveSeed) {
        char digits[24], *p = digits + sizeof digits;
        *--p = 0;
        uint64_t s = currentSeed;
        do *--p = (char)('0' + s % 10), s /= 10;
        while (s);
        put("seed "), put(p), put(": crash: signal ");
        put(sig == SIGFPE ? "SIGFPE" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGILL ? "SIGILL" : "SIGABRT");
        put("\n");
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

} // namespace

void reportCrashes() {
    for (int sig : {SIGFPE, SIGSEGV, SIGBUS, SIGILL, SIGABRT}) std::signal(sig, onFatal);
}

void crashSeed(uint64_t seed) {
    currentSeed = seed;
    haveSeed = 1;
}

} // namespace tilec::difffuzz
