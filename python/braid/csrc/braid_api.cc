#include "braid_api.h"

#include <dlfcn.h>

#include <stdexcept>

namespace braid::torch_ext {
namespace {

Api g_api;
bool g_loaded = false;

}  // namespace

const Api& api() {
  return g_api;
}

void load(const std::string& path) {
  if (g_loaded) {
    return;
  }
  // RTLD_NOLOAD first: the handle of the copy ctypes loaded, never a second copy.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) {
    lib = dlopen(path.c_str(), RTLD_NOW);
  }
  if (lib == nullptr) {
    const char* why = dlerror();
    throw std::runtime_error("braid: cannot load " + path + ": " + (why ? why : "dlopen failed"));
  }
  Api table;
#define BRAID_API_RESOLVE(name)                                                          \
  table.name = reinterpret_cast<decltype(table.name)>(dlsym(lib, #name));               \
  if (table.name == nullptr) {                                                           \
    throw std::runtime_error("braid: " + path + " has no " #name " (an older libbraid?)"); \
  }
  BRAID_API_FUNCTIONS(BRAID_API_RESOLVE)
#undef BRAID_API_RESOLVE
  g_api = table;
  g_loaded = true;
}

std::string lastError(braidComm_t comm, braidResult_t result) {
  const char* text = g_api.braidGetLastError(comm);
  if (text != nullptr && text[0] != '\0') {
    return text;
  }
  return g_api.braidGetErrorString(result);
}

}  // namespace braid::torch_ext
