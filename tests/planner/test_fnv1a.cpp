#include <catch2/catch.hpp>

#include "planner/fnv1a.h"

using canopy::planner::Fnv1a;

// The published FNV-1a 64-bit test vectors (Fowler, Noll, Vo: "FNV hash test vectors").
TEST_CASE("Fnv1a: the published 64-bit FNV-1a values", "[fnv1a]") {
  Fnv1a empty;
  CHECK(empty.value() == 0xcbf29ce484222325ull);
  Fnv1a a;
  a.bytes("a");
  CHECK(a.value() == 0xaf63dc4c8601ec8cull);
  Fnv1a foobar;
  foobar.bytes("foobar");
  CHECK(foobar.value() == 0x85944171f73967e8ull);
}

TEST_CASE("Fnv1a: a word is its eight bytes, least significant first", "[fnv1a]") {
  Fnv1a word, bytes;
  word.word(0x0807060504030201ull);
  for (unsigned char c = 1; c <= 8; ++c) bytes.byte(c);
  CHECK(word.value() == bytes.value());
  Fnv1a other;
  other.word(0x0102030405060708ull);
  CHECK(other.value() != word.value());
}
