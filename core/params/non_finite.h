// Which tensors of a parameter set hold non-finite gradients: the diagnosis a training step that
// went NaN or infinite adds to its failure reason.
#pragma once
#include <cstddef>
#include <string>

#include "core/params/parameters.h"

namespace pathbench {

// The non-finite gradient entries of tensor `e` of `params`.
size_t non_finite_gradients(const ParameterSet<float>& params, const ParameterEntry& e);

// "" when every gradient is finite; otherwise e.g. "non-finite gradients in 12 of 40 tensors;
// nearest the output: layers.1.attn.wq (1024 of 196608), …", naming at most `listed` tensors, the
// last ones in declaration order (the model declares its tensors from the input to the output, so
// these are the ones the backward reached first: where a non-finite value arose, or nearest to it).
std::string describe_non_finite_gradients(const ParameterSet<float>& params, size_t listed = 3);

}  // namespace pathbench
