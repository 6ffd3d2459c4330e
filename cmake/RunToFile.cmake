# cmake -DCOMMAND="prog;arg;..." -DOUT=file -P RunToFile.cmake: runs the command and writes its standard output
# to OUT (the man page and completion scripts, from `tilec --help-man` and `tilec --completion=SHELL`).
execute_process(COMMAND ${COMMAND} OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "${COMMAND} failed (${rc})")
endif()
# Rewritten only when the bytes change, so what depends on it is not redone.
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
