/* A plain C application of binary_mode.test: calls a kernel of elementwise_add.tile through the header. */
#include "add.h"

#include <stdio.h>

int main(void) {
    tilec_status s = add_8192(NULL, NULL, NULL, 0);
    printf("null %d %d\n", (int)s, tilec_last_error_argument());
    s = add_8192((void *)16, (void *)17, (void *)16, 0);
    printf("misaligned %d %d\n", (int)s, tilec_last_error_argument());
    s = add_8192((void *)16, (void *)16, (void *)16, 0); /* C written over A and B: __restrict__ refuses it */
    printf("overlap %d %d\n", (int)s, tilec_last_error_argument());
    /* three 128 MiB tensors 256 MiB apart */
    s = add_8192((void *)0x10000000, (void *)0x20000000, (void *)0x30000000, 0);
    printf("launch %d %s %d\n", (int)s, tilec_status_string(s), (int)tilec_last_cuda_error());
    printf("load %d unload %d\n", (int)add_odd_load(), (int)add_odd_unload());
    printf("queries %d %d %d\n", add_odd_threads(90), add_odd_threads(75), (int)add_odd_shared_bytes(80));
    return 0;
}
