# A stand-in for LibTorch's CMake package (the test only generates the operators' C++, never compiles it).
add_library(torch INTERFACE IMPORTED)
set(TORCH_LIBRARIES torch)
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")
