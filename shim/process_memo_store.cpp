// libcanopy_process_memo.so: the store behind shim/process_memo.h, one per process
// (SMPI builds only; never privatized, so every simulated rank's libcanopy.so finds
// this one). Keys and values are bytes; what is kept stays until the process ends (a
// simulation plans a few dozen size classes).
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>

namespace {
// CANOPYTEST_PROCESS_MEMO=off: every rank prices for itself, as before the store
// (tests/smpi/check_process_memo.sh compares the two).
bool kept_off() {
  static const bool off = [] {
    const char* v = std::getenv("CANOPYTEST_PROCESS_MEMO");
    return v && std::string(v) == "off";
  }();
  return off;
}
std::mutex lock;  // SMPI's actors take turns on one thread by default; other factories need it
std::unordered_map<std::string, std::string>& store() {
  static auto* kept = new std::unordered_map<std::string, std::string>;  // never destroyed: ranks may look after exit
  return *kept;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) const char* canopy_process_memo_find(const char* key, std::size_t key_bytes,
                                                                           std::size_t* value_bytes) {
  if (kept_off()) return nullptr;
  std::lock_guard<std::mutex> hold(lock);
  const auto at = store().find(std::string(key, key_bytes));
  if (at == store().end()) return nullptr;
  *value_bytes = at->second.size();
  return at->second.data();  // stable: entries are never erased or replaced
}

__attribute__((visibility("default"))) void canopy_process_memo_keep(const char* key, std::size_t key_bytes,
                                                                    const char* value, std::size_t value_bytes) {
  if (kept_off()) return;
  std::lock_guard<std::mutex> hold(lock);
  store().emplace(std::string(key, key_bytes), std::string(value, value_bytes));
}
}
