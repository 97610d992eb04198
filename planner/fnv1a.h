// FNV-1a, 64 bits (Fowler, Noll and Vo's hash): the fingerprints every rank computes
// alike and compares (the settings in force, how a schedule was planned, a call's
// arguments under CANOPY_VERIFY, a node's name). Not for anything adversarial.
#pragma once

#include <cstdint>
#include <string_view>

namespace canopy::planner {

class Fnv1a {
 public:
  void byte(unsigned char c) { h_ = (h_ ^ c) * kPrime; }
  void bytes(std::string_view s) {
    for (unsigned char c : s) byte(c);
  }
  // The eight bytes of `v`, least significant first (the same on every rank whatever
  // its byte order).
  void word(std::uint64_t v) {
    for (int b = 0; b < 8; ++b) byte(static_cast<unsigned char>(v >> (8 * b)));
  }
  std::uint64_t value() const { return h_; }

 private:
  static constexpr std::uint64_t kPrime = 1099511628211ull;
  std::uint64_t h_ = 14695981039346656037ull;
};

}  // namespace canopy::planner
