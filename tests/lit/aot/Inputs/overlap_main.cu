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
    // A strided tensor reaches (m - 1) * s + 64 elements from its pointer: 4 rows every 16 floats span 112.
    report("strided X, Y just past its span", gather(x, x + 112, 4, 16, 0));
    report("strided X, Y inside its span", gather(x, x + 111, 4, 16, 0));
    printf("strided X empty: %d\n", (int)gather(x, x, 0, 16, 0));
    // Y's rows every 128 floats span 448: X at 300 lies between Y's third row and its fourth.
    report("strided Y, X in its gaps' span", scatter(x + 300, x, 4, 128, 0));
    report("strided Y, X past its span", scatter(x + 448, x, 4, 128, 0));
    printf("message: %s\n", tilec_status_string(TILEC_ERROR_OVERLAP));
    return 0;
}
