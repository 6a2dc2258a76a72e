// Seeded normal, uniform and constant initialization of parameter tensors.
#include "core/params/init.h"

#include "core/rng.h"

namespace pathbench {

template <typename T>
void init_normal(ParameterSet<T>& params, typename ParameterSet<T>::Id id, uint64_t seed, double std) {
  CounterRng rng(seed, params.entry(id).name);
  T* p = params.value(id);
  for (size_t i = 0; i < params.entry(id).size; ++i) p[i] = T(std * rng.normal());
}

template <typename T>
void init_uniform(ParameterSet<T>& params, typename ParameterSet<T>::Id id, uint64_t seed, double bound) {
  CounterRng rng(seed, params.entry(id).name);
  T* p = params.value(id);
  for (size_t i = 0; i < params.entry(id).size; ++i) p[i] = T(bound * (2.0 * rng.uniform() - 1.0));
}

template <typename T>
void init_constant(ParameterSet<T>& params, typename ParameterSet<T>::Id id, double value) {
  T* p = params.value(id);
  for (size_t i = 0; i < params.entry(id).size; ++i) p[i] = T(value);
}

template void init_normal<float>(ParameterSet<float>&, size_t, uint64_t, double);
template void init_normal<double>(ParameterSet<double>&, size_t, uint64_t, double);
template void init_uniform<float>(ParameterSet<float>&, size_t, uint64_t, double);
template void init_uniform<double>(ParameterSet<double>&, size_t, uint64_t, double);
template void init_constant<float>(ParameterSet<float>&, size_t, double);
template void init_constant<double>(ParameterSet<double>&, size_t, double);

}  // namespace pathbench
