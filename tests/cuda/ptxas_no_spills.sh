#!/usr/bin/env bash
# Whether a ptxas -v report (nvcc -Xptxas -v's output) shows entry functions, every one of them with no stack
# frame and no spills. Prints what it found; exit 0 when clean, 1 otherwise.
# Usage: ptxas_no_spills.sh PTXAS_LOG
log=$1
entries=$(grep -c "Compiling entry function" "$log")
clean=$(grep -cE "^\s*0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" "$log")
if [ "$entries" = 0 ] || [ "$entries" != "$clean" ]; then
    grep -E "entry function|stack frame" "$log"
    echo "FAIL: $entries entry functions, $clean of them without stack frame and spills"
    exit 1
fi
echo "ptxas: $entries entry functions, none with a stack frame or spills"
