# Writes OUT: a C++ file holding every stdlib/tilec/*.cuh under ROOT as a string, so that generated code can
# embed the device runtime without the tilec installation at hand. Run by the build (cmake -P).
file(GLOB files RELATIVE ${ROOT} ${ROOT}/tilec/*.cuh)
list(SORT files)
set(body "")
foreach(f ${files})
  file(READ ${ROOT}/${f} text)
  string(FIND "${text}" ")tilec_embed\"" bad)
  if(NOT bad EQUAL -1)
    message(FATAL_ERROR "${f} contains the raw-string delimiter")
  endif()
  string(APPEND body "    {\"${f}\", R\"tilec_embed(${text})tilec_embed\"},\n")
endforeach()
file(WRITE ${OUT}.tmp "// Generated from stdlib/ by cmake/EmbedStdlib.cmake. Do not edit.
#include \"codegen/Stdlib.h\"

namespace tilec::codegen {

const std::vector<StdlibFile> &stdlibFiles() {
    static const std::vector<StdlibFile> files = {
${body}    };
    return files;
}

} // namespace tilec::codegen
")
configure_file(${OUT}.tmp ${OUT} COPYONLY)
