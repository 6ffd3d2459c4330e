/// \file
/// Outputs written only when their bytes change (src/driver/DriverImpl.h): a comment-only edit of a .tile file
/// regenerates the same .cu, and make or ninja (restat) then rebuild nothing downstream of it.
#include "driver/DriverImpl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace tilec::driver {

namespace {

/// Whether the regular file at `path` holds exactly `bytes`.
bool holds(const std::string &path, const struct stat &st, std::string_view bytes) {
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size != bytes.size()) return false;
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::string buf(64 * 1024, '\0');
    size_t at = 0;
    while (at < bytes.size()) {
        f.read(buf.data(), (std::streamsize)std::min(buf.size(), bytes.size() - at));
        size_t got = (size_t)f.gcount();
        if (got == 0 || bytes.compare(at, got, buf.data(), got) != 0) return false;
        at += got;
    }
    return f.peek() == std::char_traits<char>::eof();
}

[[noreturn]] void cannotWrite(const std::string &path, int err) {
    throw UsageError{"cannot write '" + path + "'" + (err ? std::string(": ") + std::strerror(err) : "")};
}

/// Straight into `path` (for what is not a regular file, e.g. /dev/null, or a folder tilec may not create in).
void writeInPlace(const std::string &path, std::string_view bytes) {
    errno = 0;
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), (std::streamsize)bytes.size());
    f.close();
    if (!f) cannotWrite(path, errno);
}

/// The mode a newly created file gets (0666 less the umask), read without changing it for good.
mode_t newFileMode() {
    mode_t mask = ::umask(022);
    ::umask(mask);
    return 0666 & ~mask;
}

} // namespace

bool writeIfChanged(const std::string &path, std::string_view bytes) {
    struct stat st {};
    bool exists = ::stat(path.c_str(), &st) == 0;
    if (exists && holds(path, st, bytes)) return false;
    if (exists && !S_ISREG(st.st_mode)) {
        writeInPlace(path, bytes);
        return true;
    }
    // A temporary file beside the output, renamed over it: a reader (or a build interrupted now) sees the old
    // bytes or the new ones, never half of them.
    std::string tmp = path + ".tmp-XXXXXX";
    int fd = ::mkstemp(tmp.data());
    if (fd < 0) {
        if (errno == EACCES || errno == EROFS) return writeInPlace(path, bytes), true;
        cannotWrite(path, errno);
    }
    ::fchmod(fd, exists ? (st.st_mode & 07777) : newFileMode());
    size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            cannotWrite(path, e);
        }
        done += (size_t)n;
    }
    if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        ::unlink(tmp.c_str());
        cannotWrite(path, e);
    }
    return true;
}

std::string readFile(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    if (!f) throw UsageError{"cannot read '" + path + "'"};
    return ss.str();
}

} // namespace tilec::driver
