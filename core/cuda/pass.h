// What a GPU model's buffers are sized for: a forward alone (evaluation, prediction) or a forward
// and its backward (training). A forward-only pass leaves the gradient buffers and the backward
// workspaces as they are, so an evaluation at a larger batch than training's does not grow them.
#pragma once

namespace pathbench::cuda {

enum class Pass { forward, training };

}  // namespace pathbench::cuda
