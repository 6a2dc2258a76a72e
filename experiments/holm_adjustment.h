// Holm's step-down adjustment of p-values for several tests read together, e.g. every row of a
// `pathbench table --passing --against ROW` table tested against the same row: a family of m tests
// rejects at level α where its adjusted p ≤ α, and the chance of any false rejection stays ≤ α.
#pragma once
#include <vector>

namespace pathbench {

// The adjusted p-values, in the order of `p`: with p sorted ascending as p(1) ≤ … ≤ p(m), the
// adjusted p(i) = max over j ≤ i of min(1, (m − j + 1) · p(j)) — the values R's p.adjust(p, "holm")
// gives. Ties keep their input order. Requires every p in [0, 1].
std::vector<double> holm_adjusted(const std::vector<double>& p);

}  // namespace pathbench
