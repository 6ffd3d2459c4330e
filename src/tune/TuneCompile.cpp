/// \file
/// One configuration of `tilec tune` built into a library the tuner loads (src/tune/TuneImpl.h): tilec
/// itself, as a child process, writes binary-mode C for the kernel instantiated with the configuration
/// (the cubin comes from NVRTC, exactly as a `--tuned` build makes it, and the launch code is the one
/// applications call), then the C compiler links it with a small entry function into a shared library.
/// Child processes keep the configurations apart: several build at once, and one that fails is recorded.
#include "tune/TuneImpl.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <sstream>

extern char **environ;

namespace tilec::tune {

namespace {

/// Runs argv with stdout and stderr to `log`; the exit status, 127 when it could not be started, 128+N
/// for a signal.
int runProcess(const std::vector<std::string> &argv, const std::string &log) {
    std::vector<char *> cargv;
    for (auto &a : argv) cargv.push_back(const_cast<char *>(a.c_str()));
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return 127;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return 127;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string readFile(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

/// The first line of a log that says "error" (else its first line), shortened.
std::string firstError(const std::string &log) {
    std::istringstream in(log);
    std::string line, first;
    while (std::getline(in, line)) {
        if (first.empty() && !line.empty()) first = line;
        if (line.find("error") != std::string::npos) {
            first = line;
            break;
        }
    }
    return first.size() > 300 ? first.substr(0, 300) + "..." : first;
}

bool mentionsLimit(const std::string &log) {
    for (const char *w : {"shared memory", "registers", "exceeds", "too many", "limit"})
        if (log.find(w) != std::string::npos) return true;
    return false;
}

/// The entry function: unpacks the argument array into the launch function's parameters.
std::string entrySource(const std::string &headerName, const std::string &kernel, const std::vector<CParam> &params) {
    std::string s = "#include \"" + headerName + "\"\n";
    s += "tilec_status tilec_tune_entry(void *const *args, cudaStream_t stream) {\n    return " + kernel + "(";
    for (size_t i = 0; i + 1 < params.size(); ++i) {
        const std::string &t = params[i].type;
        std::string a = "args[" + std::to_string(i) + "]";
        s += (i ? ", " : "") + (t.back() == '*' ? "(" + t + ")" + a : "*(" + t + " *)" + a);
    }
    return s + (params.size() > 1 ? ", " : "") + "stream);\n}\n";
}

} // namespace

Built buildConfig(const BuildSetup &s, size_t index, const std::string &call) {
    auto t0 = std::chrono::steady_clock::now();
    Built b;
    std::string stem = s.dir + "/cfg" + std::to_string(index);
    std::string archs;
    for (auto &a : s.archs) archs += (archs.empty() ? "" : ",") + a;
    std::vector<std::string> argv{s.tilec, s.input, "--arch=" + archs};
    for (auto &d : s.defines) argv.insert(argv.end(), {"-D", d});
    for (auto &d : s.importDirs) argv.insert(argv.end(), {"-I", d});
    argv.insert(argv.end(), {"--export", s.kernel + "=" + call, "--kernel", s.kernel, "-o", stem + ".c"});
    int rc = runProcess(argv, stem + ".tilec.log");
    auto finish = [&] {
        b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return b;
    };
    if (rc != 0) {
        std::string log = readFile(stem + ".tilec.log");
        b.status = rc == 1 && mentionsLimit(log) ? "resource_limit" : "compile_error";
        b.detail = (rc == 3 ? "tilec internal error: " : rc == 1 ? "" : "tilec exit " + std::to_string(rc) + ": ") +
                   firstError(log);
        return finish();
    }
    b.header = readFile(stem + ".h");
    std::vector<CParam> params;
    try {
        params = launchParameters(b.header, s.kernel);
    } catch (const std::invalid_argument &e) {
        b.status = "compile_error";
        b.detail = e.what();
        return finish();
    }
    {
        std::ofstream f(stem + "_entry.c");
        f << entrySource("cfg" + std::to_string(index) + ".h", s.kernel, params);
    }
    std::istringstream words(s.cc); // a command, e.g. "ccache gcc"
    std::vector<std::string> cc{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    for (const char *a : {"-shared", "-fPIC", "-O1"}) cc.push_back(a);
    cc.insert(cc.end(), {"-I" + s.cudaInclude, "-I" + s.dir, stem + ".c", stem + "_entry.c", "-o", stem + ".so"});
    rc = runProcess(cc, stem + ".cc.log");
    if (rc != 0) {
        b.status = "compile_error";
        b.detail = (rc == 127 ? "cannot run the C compiler '" + s.cc + "' (set CC): " : "C compiler: ") +
                   firstError(readFile(stem + ".cc.log"));
        return finish();
    }
    b.library = stem + ".so";
    return finish();
}

} // namespace tilec::tune
