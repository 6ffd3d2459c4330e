/// \file
/// `-o x.o`: binary mode's C source compiled by the C compiler ($CC, --ccbin) in a private temporary
/// directory (src/driver/DriverImpl.h).
#include "driver/DriverImpl.h"

#include "tilec/Diagnostics.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tilec::driver {

namespace {

std::vector<std::string> splitSpaces(const std::string &s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    std::string w;
    while (in >> w) out.push_back(w);
    return out;
}

/// Removes the temporary directory and what is in it, whatever way the compilation ends.
struct TempDir {
    std::string path;
    std::vector<std::string> files;
    ~TempDir() {
        for (auto &f : files) ::unlink((path + "/" + f).c_str());
        if (!path.empty()) ::rmdir(path.c_str());
    }
};

} // namespace

void compileC(const std::string &source, const std::string &baseName, const std::string &objPath,
              const std::string &compiler, const std::string &cudaInclude) {
    std::vector<std::string> argv = splitSpaces(compiler);
    if (argv.empty()) throw UsageError{"no C compiler to build '" + objPath + "' (set CC or --ccbin)"};

    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tilec-XXXXXX";
    TempDir dir;
    if (!::mkdtemp(pattern.data())) throw UsageError{"cannot create a temporary directory in " + pattern.substr(0, pattern.size() - 13)};
    dir.path = pattern;
    // The object is made in the temporary folder too, then copied to objPath only when its bytes differ.
    std::string cName = baseName + ".c", oName = baseName + ".o", logName = "cc.log";
    dir.files = {cName, oName, logName};
    {
        std::ofstream f(dir.path + "/" + cName, std::ios::binary);
        f << source;
        if (!f) throw UsageError{"cannot write '" + dir.path + "/" + cName + "'"};
    }
    for (const char *a : {"-c", "-fPIC", "-O2"}) argv.push_back(a);
    if (!cudaInclude.empty()) argv.push_back("-I" + cudaInclude);
    argv.push_back(cName);
    argv.push_back("-o");
    argv.push_back(oName);

    std::vector<char *> cargv;
    for (auto &a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    // Everything the child needs is made before fork: it may only make async-signal-safe calls.
    std::string logPath = dir.path + "/" + logName;
    // The child reports a failed exec through this pipe (closed on a successful exec).
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw UsageError{std::string("cannot run the C compiler: ") + std::strerror(errno)};
    pid_t pid = ::fork();
    if (pid < 0) throw UsageError{std::string("cannot run the C compiler: ") + std::strerror(errno)};
    if (pid == 0) {
        ::close(fds[0]);
        int log = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (log >= 0 && ::chdir(dir.path.c_str()) == 0) {
            ::dup2(log, 1);
            ::dup2(log, 2);
            ::execvp(cargv[0], cargv.data());
        }
        int e = errno;
        (void)!::write(fds[1], &e, sizeof e);
        ::_exit(127);
    }
    ::close(fds[1]);
    int execErr = 0;
    bool execFailed = ::read(fds[0], &execErr, sizeof execErr) == (ssize_t)sizeof execErr;
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (execFailed)
        throw UsageError{"cannot run the C compiler '" + argv[0] + "' (" + std::strerror(execErr) +
                         "); set CC or --ccbin to one"};
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        writeIfChanged(objPath, readFile(dir.path + "/" + oName));
        return;
    }
    std::ifstream logFile(logPath);
    std::ostringstream log;
    log << logFile.rdbuf();
    std::string how = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status)) : "killed by a signal";
    throw InternalError("internal error: in cc: '" + compiler + "' rejected the generated C for '" + objPath + "' (" +
                        how + "):\n" + log.str());
}

} // namespace tilec::driver
