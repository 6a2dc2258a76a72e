// Whether the Hopper-only kernels run (wgmma, built for sm_90a): they replace their portable
// (mma.sync) counterparts where the build holds sm_90a code (CMAKE_CUDA_ARCHITECTURES naming 90a)
// and the current device is a compute-capability 9.0 GPU (H100, H200). Tests and benchmarks switch
// them off to run the portable kernels on the same GPU; both must pass the same conformance tests.
#pragma once
#include <cstdint>

namespace pathbench::cuda {

// Whether this build holds the Hopper kernels (asks no device: host code that sizes buffers for
// them may call it without a GPU).
bool hopper_kernels_built();
// Whether this build and the current device can run the Hopper kernels.
bool hopper_kernels_available();
// Whether the kernels that have a Hopper form use it now: available and not switched off.
bool hopper_kernels();
// Switches the Hopper forms off (false) or back on (true, where available), process-wide; queue no
// work from other threads while switching.
void set_hopper_kernels(bool enabled);

// Called by a kernel's host code where it has a Hopper form: hopper_kernels(), and when true the
// launch that follows is counted (hopper_launches), so that tests can see the form they chose run.
bool choose_hopper_form();
int64_t hopper_launches();

// Switches the Hopper forms for its lifetime, then back to their default (on where available).
class ScopedHopperKernels {
 public:
  explicit ScopedHopperKernels(bool enabled) { set_hopper_kernels(enabled); }
  ~ScopedHopperKernels() { set_hopper_kernels(true); }
  ScopedHopperKernels(const ScopedHopperKernels&) = delete;
  ScopedHopperKernels& operator=(const ScopedHopperKernels&) = delete;
};

}  // namespace pathbench::cuda
