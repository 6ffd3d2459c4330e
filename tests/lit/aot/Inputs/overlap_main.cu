// restrict_overlap.test: the launch functions' overlap checks on host memory (they run before any CUDA call).
#include "overlap.h"

#include <stdio.h>

static void report(const char *what, tilec_status s) {
    if (s == TILEC_ERROR_OVERLAP) printf("%s: %d argument %d\n", what, (int)s, tilec_last_error_argument());
    else printf("%s: not refused\n", what); // it went on to CUDA: no device here (on a GPU, a launch)
}

int main() {
    static float x[1024];
    static unsigned short h[2 * 4 * 256];
    report("in place", plus(x, x, 1024, 0));
    report("Y one element into X", plus(x, x + 1023, 1024, 0));
    report("Y just past X", plus(x, x + 512, 512, 0));
    printf("empty in place: %d\n", (int)plus(x, x, 0, 0)); // an empty grid returns before any CUDA call
    report("A and B the same", rows(h, h, x, 0));
    report("C over B", rows(h, h + 1024, reinterpret_cast<float *>(h + 1024), 0));
    printf("message: %s\n", tilec_status_string(TILEC_ERROR_OVERLAP));
    return 0;
}
