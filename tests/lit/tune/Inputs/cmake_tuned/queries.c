/* The tuned dispatcher's queries: the largest figure of its two configurations (64 and 512 threads). */
#include "axpby.h"
#include "elementwise_add.h"
#include <stdio.h>
int main(void) {
    printf("app_axpby_threads(80) = %d, __cfg0 %d, __cfg1 %d; add_8192_threads(80) = %d\n", app_axpby_threads(80),
           app_axpby__cfg0_threads(80), app_axpby__cfg1_threads(80), add_8192_threads(80));
    return 0;
}
