#include "shim/process_memo.h"

#include <cstddef>

#include "shim/platform.h"

// libcanopy_process_memo.so (shim/process_memo_store.cpp), where linked.
extern "C" {
__attribute__((weak)) const char* canopy_process_memo_find(const char* key, std::size_t key_bytes,
                                                           std::size_t* value_bytes);
__attribute__((weak)) void canopy_process_memo_keep(const char* key, std::size_t key_bytes, const char* value,
                                                    std::size_t value_bytes);
}

namespace canopy::shim {

bool process_memo_in_use() {
  return platform().shares_plans_between_ranks && canopy_process_memo_find && canopy_process_memo_keep;
}

std::string memoized(const std::string& key, const std::function<std::string()>& compute) {
  if (!process_memo_in_use()) return compute();
  std::size_t bytes = 0;
  if (const char* value = canopy_process_memo_find(key.data(), key.size(), &bytes)) return std::string(value, bytes);
  std::string value = compute();
  canopy_process_memo_keep(key.data(), key.size(), value.data(), value.size());
  return value;
}

}  // namespace canopy::shim
