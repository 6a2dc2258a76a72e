// Construction of permutation groups (cyclic, symmetric, alternating and their direct products),
// their multiplication tables, and element parsing.
#include "tasks/groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace pathbench {

namespace {

constexpr int kMaxOrder = 1000;

// One factor: its elements (identity first) as permutations of 0..degree-1, with symbols.
struct Factor {
  int degree = 0;
  std::vector<Permutation> elements;
  std::vector<std::string> symbols;
};

bool is_even(const Permutation& p) {
  int transpositions = 0;
  std::vector<bool> seen(p.size(), false);
  for (size_t start = 0; start < p.size(); ++start) {
    int length = 0;
    for (size_t x = start; !seen[x]; x = size_t(p[x])) {
      seen[x] = true;
      ++length;
    }
    if (length > 0) transpositions += length - 1;
  }
  return transpositions % 2 == 0;
}

std::string one_line(const Permutation& p) {
  std::string s;
  for (int x : p) s += char('0' + x);
  return s;
}

Factor cyclic(int n) {
  Factor f{n, {}, {}};
  for (int k = 0; k < n; ++k) {
    Permutation p(n);
    for (int x = 0; x < n; ++x) p[x] = (x + k) % n;
    f.elements.push_back(p);
    f.symbols.push_back(std::to_string(k));
  }
  return f;
}

// All permutations of n points (only the even ones when `even_only`), in lexicographic order.
Factor symmetric(int n, bool even_only) {
  Factor f{n, {}, {}};
  Permutation p = identity_permutation(n);
  do {
    if (even_only && !is_even(p)) continue;
    f.elements.push_back(p);
    f.symbols.push_back(one_line(p));
  } while (std::next_permutation(p.begin(), p.end()));
  return f;
}

std::optional<Factor> parse_factor(const std::string& text) {
  if (text.size() < 2 || text.size() > 5) return std::nullopt;
  for (size_t i = 1; i < text.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
  const int n = std::stoi(text.substr(1));
  switch (text[0]) {
    case 'Z': return (n >= 1 && n <= kMaxOrder) ? std::optional(cyclic(n)) : std::nullopt;
    case 'S': return (n >= 1 && n <= 6) ? std::optional(symmetric(n, false)) : std::nullopt;
    case 'A': return (n >= 3 && n <= 6) ? std::optional(symmetric(n, true)) : std::nullopt;
    default: return std::nullopt;
  }
}

std::string permutation_key(const Permutation& p) {
  std::string key;
  for (int x : p) key += std::to_string(x) + ",";
  return key;
}

// "(0 1 2)(3 4)" → the permutation of `degree` points; nullopt when malformed or out of range.
std::optional<Permutation> parse_cycles(const std::string& text, int degree) {
  Permutation p = identity_permutation(degree);
  std::vector<bool> moved(degree, false);
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '(') return std::nullopt;
    const size_t close = text.find(')', i);
    if (close == std::string::npos) return std::nullopt;
    std::vector<int> cycle;
    size_t j = i + 1;
    while (j < close) {
      if (text[j] == ' ' || text[j] == ',') {
        ++j;
        continue;
      }
      if (!std::isdigit(static_cast<unsigned char>(text[j]))) return std::nullopt;
      int x = 0;
      for (; j < close && std::isdigit(static_cast<unsigned char>(text[j])) && x <= degree; ++j) x = x * 10 + (text[j] - '0');
      if (x >= degree || moved[x]) return std::nullopt;
      moved[x] = true;
      cycle.push_back(x);
    }
    for (size_t c = 0; c < cycle.size(); ++c) p[cycle[c]] = cycle[(c + 1) % cycle.size()];
    i = close + 1;
  }
  return p;
}

}  // namespace

Permutation compose(const Permutation& a, const Permutation& b) {
  Permutation out(b.size());
  for (size_t x = 0; x < b.size(); ++x) out[x] = a[size_t(b[x])];
  return out;
}

Permutation identity_permutation(int degree) {
  Permutation p(degree);
  for (int x = 0; x < degree; ++x) p[x] = x;
  return p;
}

FiniteGroup FiniteGroup::from_name(const std::string& name, const std::string& where) {
  auto fail = [&](const std::string& why) {
    return Error(fmt::format("{}: key 'group' has value \"{}\": {}", where, name, why));
  };
  std::vector<Factor> factors;
  int64_t order = 1;
  size_t start = 0;
  while (true) {
    const size_t end = name.find('x', start);
    const std::string text = name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    std::optional<Factor> f = parse_factor(text);
    if (!f)
      throw fail(fmt::format("unknown factor '{}' (factors Z<n> n<=1000, S<n> n<=6, A<n> 3<=n<=6, joined by 'x', "
                             "e.g. A5, S5, A4xZ5, Z60, S3, Z2)", text));
    order *= int64_t(f->elements.size());
    if (order > kMaxOrder) throw fail(fmt::format("order above {}", kMaxOrder));
    factors.push_back(std::move(*f));
    if (end == std::string::npos) break;
    start = end + 1;
  }

  FiniteGroup g;
  g.name_ = name;
  for (const auto& f : factors) g.degree_ += f.degree;
  // Cartesian product, first factor most significant; each element acts on its factor's points.
  g.elements_.push_back({});
  g.symbols_.push_back("");
  for (const auto& f : factors) {
    std::vector<Permutation> elements;
    std::vector<std::string> symbols;
    for (size_t e = 0; e < g.elements_.size(); ++e)
      for (size_t k = 0; k < f.elements.size(); ++k) {
        Permutation p = g.elements_[e];
        const int offset = int(p.size());
        for (int x : f.elements[k]) p.push_back(x + offset);
        elements.push_back(std::move(p));
        symbols.push_back(g.symbols_[e].empty() ? f.symbols[k] : g.symbols_[e] + "," + f.symbols[k]);
      }
    g.elements_ = std::move(elements);
    g.symbols_ = std::move(symbols);
  }
  const int n = g.order();
  for (int e = 0; e < n; ++e) g.index_[permutation_key(g.elements_[e])] = e;
  g.table_.resize(size_t(n) * n);
  g.inverses_.assign(n, -1);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      const int ab = *g.find(compose(g.elements_[a], g.elements_[b]));
      g.table_[size_t(a) * n + b] = ab;
      if (ab == g.identity()) g.inverses_[a] = b;
    }
  return g;
}

std::optional<int> FiniteGroup::find(const Permutation& p) const {
  auto it = index_.find(permutation_key(p));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> FiniteGroup::parse_element(const std::string& text) const {
  for (int e = 0; e < order(); ++e)
    if (symbols_[e] == text) return e;
  if (text.empty() || text[0] != '(') return std::nullopt;
  std::optional<Permutation> p = parse_cycles(text, degree_);
  return p ? find(*p) : std::nullopt;
}

}  // namespace pathbench
