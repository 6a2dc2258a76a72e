// Finite groups of the word-problem task: element counts, group axioms checked by composing
// permutations, element orders, parsing, and rejected names.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "core/error.h"
#include "tasks/groups.h"

using namespace pathbench;

namespace {

FiniteGroup group(const std::string& name) { return FiniteGroup::from_name(name, "test"); }

// Order of element g, by composing its permutation with itself until the identity.
int element_order(const FiniteGroup& G, int g) {
  const Permutation id = identity_permutation(G.degree());
  Permutation p = G.permutation(g);
  int order = 1;
  while (p != id) {
    p = compose(p, G.permutation(g));
    ++order;
  }
  return order;
}

bool is_even(const Permutation& p) {
  int inversions = 0;
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j) inversions += p[i] > p[j];
  return inversions % 2 == 0;
}

}  // namespace

TEST_CASE("groups have the expected numbers of elements", "[tasks]") {
  const std::map<std::string, int> orders = {{"A5", 60}, {"S5", 120}, {"A4xZ5", 60}, {"Z60", 60}, {"S3", 6},
                                             {"Z2", 2},  {"A4", 12},  {"S4", 24},     {"Z2xZ2xZ3", 12}};
  for (const auto& [name, order] : orders) {
    const FiniteGroup G = group(name);
    INFO(name);
    CHECK(G.order() == order);
    std::set<Permutation> distinct;
    for (int g = 0; g < G.order(); ++g) distinct.insert(G.permutation(g));
    CHECK(int(distinct.size()) == order);
  }
}

TEST_CASE("group axioms hold, checked by composing permutations", "[tasks]") {
  for (const std::string name : {"A5", "S5", "A4xZ5", "Z60", "S3", "Z2"}) {
    INFO(name);
    const FiniteGroup G = group(name);
    const int n = G.order();
    const Permutation id = identity_permutation(G.degree());
    CHECK(G.permutation(G.identity()) == id);
    bool closed = true, table_matches = true, identity_ok = true, inverses_ok = true;
    for (int a = 0; a < n; ++a) {
      identity_ok = identity_ok && G.multiply(G.identity(), a) == a && G.multiply(a, G.identity()) == a;
      inverses_ok = inverses_ok && compose(G.permutation(a), G.permutation(G.inverse(a))) == id &&
                    compose(G.permutation(G.inverse(a)), G.permutation(a)) == id;
      for (int b = 0; b < n; ++b) {
        const auto ab = G.find(compose(G.permutation(a), G.permutation(b)));
        closed = closed && ab.has_value();
        table_matches = table_matches && ab && *ab == G.multiply(a, b);
      }
    }
    CHECK(closed);
    CHECK(table_matches);
    CHECK(identity_ok);
    CHECK(inverses_ok);
    bool associative = true;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        for (int c = 0; c < n; ++c)
          associative = associative && G.multiply(G.multiply(a, b), c) == G.multiply(a, G.multiply(b, c));
    CHECK(associative);
  }
}

TEST_CASE("groups have the structure their names promise", "[tasks]") {
  auto order_counts = [](const FiniteGroup& G) {
    std::map<int, int> counts;
    for (int g = 0; g < G.order(); ++g) ++counts[element_order(G, g)];
    return counts;
  };
  // A5: the even permutations of 5 points, with 15 involutions, 20 3-cycles and 24 5-cycles.
  const FiniteGroup a5 = group("A5");
  for (int g = 0; g < a5.order(); ++g) CHECK(is_even(a5.permutation(g)));
  CHECK(order_counts(a5) == std::map<int, int>{{1, 1}, {2, 15}, {3, 20}, {5, 24}});
  // S5: 10 transpositions, 20 3-cycles, 30 4-cycles, 24 5-cycles, 15 double transpositions, 20 of order 6.
  CHECK(order_counts(group("S5")) == std::map<int, int>{{1, 1}, {2, 25}, {3, 20}, {4, 30}, {5, 24}, {6, 20}});
  // Z60 is cyclic and abelian; A4xZ5 has no element of order 60 and is not abelian.
  const FiniteGroup z60 = group("Z60"), a4z5 = group("A4xZ5");
  CHECK(order_counts(z60).at(60) == 16);  // φ(60) generators
  CHECK(order_counts(a4z5).count(60) == 0);
  bool z60_abelian = true, a4z5_abelian = true;
  for (int a = 0; a < 60; ++a)
    for (int b = 0; b < 60; ++b) {
      z60_abelian = z60_abelian && z60.multiply(a, b) == z60.multiply(b, a);
      a4z5_abelian = a4z5_abelian && a4z5.multiply(a, b) == a4z5.multiply(b, a);
    }
  CHECK(z60_abelian);
  CHECK_FALSE(a4z5_abelian);
}

TEST_CASE("group elements parse from symbols and cycle notation", "[tasks]") {
  const FiniteGroup a5 = group("A5");
  const auto c = a5.parse_element("(0 1 2)");
  REQUIRE(c);
  CHECK(a5.permutation(*c) == Permutation{1, 2, 0, 3, 4});
  CHECK(a5.symbol(*c) == "12034");
  CHECK(a5.parse_element("12034") == c);
  CHECK(a5.parse_element("()") == a5.identity());
  CHECK_FALSE(a5.parse_element("(0 1)"));        // odd: in S5, not A5
  CHECK_FALSE(a5.parse_element("(0 5 1)"));      // point 5 does not exist
  CHECK_FALSE(a5.parse_element("(0 1 0)"));      // repeated point
  CHECK_FALSE(a5.parse_element("banana"));
  const FiniteGroup a4z5 = group("A4xZ5");
  const auto g = a4z5.parse_element("(0 1 2)(4 5 6 7 8)");
  REQUIRE(g);
  CHECK(a4z5.symbol(*g) == "1203,1");
}

TEST_CASE("unknown or oversized group names are rejected naming the key and value", "[tasks]") {
  for (const std::string name : {"Q8", "A7", "S7", "Z0", "A5xA5", "", "A5x", "Z2y"}) {
    INFO(name);
    CHECK_THROWS_WITH(group(name), Catch::Contains("key 'group'") && Catch::Contains("\"" + name + "\""));
  }
}
