// Finite groups built from permutations, for the word-problem task. A group is named by factors
// joined with 'x' (a direct product): Z<n> (cyclic, n ≤ 1000), S<n> (symmetric, n ≤ 6), A<n>
// (alternating, 3 ≤ n ≤ 6); e.g. "A5", "S5", "A4xZ5", "Z60", "S3", "Z2" (parity). Every element is
// a permutation of the disjoint union of the factors' points; the multiplication table, identity
// and inverses are computed by composing those permutations.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace pathbench {

using Permutation = std::vector<int>;  // p[x] = image of point x

// Function composition: (a∘b)(x) = a(b(x)). The group product a·b is a∘b.
Permutation compose(const Permutation& a, const Permutation& b);
Permutation identity_permutation(int degree);

class FiniteGroup {
 public:
  // Throws pathbench::Error naming `where`, the key 'group' and the name when it is not a group
  // this file can build (or its order exceeds 1000).
  static FiniteGroup from_name(const std::string& name, const std::string& where);

  const std::string& name() const { return name_; }
  int order() const { return int(elements_.size()); }
  int degree() const { return degree_; }
  int identity() const { return 0; }  // elements are listed with the identity first
  int multiply(int a, int b) const { return table_[size_t(a) * elements_.size() + b]; }
  int inverse(int a) const { return inverses_[a]; }
  const Permutation& permutation(int g) const { return elements_[g]; }
  // Printable form: factor symbols joined by ','; Z<n> factors show the power of the generating
  // n-cycle, S<n>/A<n> factors the one-line notation (images of 0, 1, …).
  const std::string& symbol(int g) const { return symbols_[g]; }
  // The element whose permutation is `p`, if any.
  std::optional<int> find(const Permutation& p) const;
  // An element given by its symbol or in cycle notation over the group's points ("(0 1 2)(3 4)",
  // "()" for the identity); nullopt when the text names no element of this group.
  std::optional<int> parse_element(const std::string& text) const;

 private:
  std::string name_;
  int degree_ = 0;
  std::vector<Permutation> elements_;  // [order] of [degree]
  std::vector<std::string> symbols_;   // [order]
  std::vector<int> table_;             // [order, order] product indices
  std::vector<int> inverses_;          // [order]
  std::unordered_map<std::string, int> index_;  // permutation key → element
};

}  // namespace pathbench
