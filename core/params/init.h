// Seeded parameter initialization: each tensor draws from its own stream keyed by (seed, name),
// so adding a parameter never changes the initial values of the others.
#pragma once
#include <cstdint>

#include "core/params/parameters.h"

namespace pathbench {

template <typename T>
void init_normal(ParameterSet<T>& params, typename ParameterSet<T>::Id id, uint64_t seed, double std);
// Uniform in [−bound, bound].
template <typename T>
void init_uniform(ParameterSet<T>& params, typename ParameterSet<T>::Id id, uint64_t seed, double bound);
template <typename T>
void init_constant(ParameterSet<T>& params, typename ParameterSet<T>::Id id, double value);

}  // namespace pathbench
