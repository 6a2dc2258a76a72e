// Replaying training steps from a checkpoint: load a run's parameters and AdamW state, then take
// the run's next training steps (the same batches, the same learning rates) on any device and
// precision, recording each step's loss, gradient norm and per-tensor gradient norms. Comparing a
// replay on the GPU with one on the CPU from the same checkpoint tells whether a gradient spike is
// the model's own (both see it) or a device's (one does).
#pragma once
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/attention/op_call_record.h"
#include "experiments/run_config.h"
#include "tasks/task.h"

namespace pathbench {

struct ReplayedStep {
  int64_t step = 0;         // 1-based, as in the run's curve
  double loss = 0, grad_norm = 0, lr = 0;
  // Each tensor's gradient norm before clipping, in declaration order (NaN where the step's norm
  // was infinite, so clipping left nothing to recover it from).
  std::vector<std::pair<std::string, double>> tensor_grad_norms;
  // Non-finite gradient entries per tensor, only the tensors that have any.
  std::map<std::string, int64_t> non_finite;
};

struct Replay {
  int64_t checkpoint_step = 0;  // the steps the checkpoint had taken
  std::string device;           // the processor, in words
  std::vector<ReplayedStep> steps;
  // Further passes over the same steps from the same state (`repeats` − 1 of them): on the CPU they
  // equal the first; on the GPU they differ by the order of atomic adds, so a step that spikes in
  // some passes and not in others is the device's, not the data's.
  std::vector<std::vector<ReplayedStep>> repeats;
  // The attention call recorded (AttentionCallRecording) and the step it belongs to.
  std::optional<RecordedOpCall> recorded_call;
  int64_t recorded_step = 0;
};

// Which attention-op call a replay records for `pathbench op`: layer `layer`'s, at the first step of
// the first pass whose gradient norm exceeds `above` or is not finite.
struct AttentionCallRecording {
  int64_t layer = 0;
  double above = INFINITY;
};

// Loads `checkpoint` (written by any run of `config`'s model, on any device: the run hash is not
// checked, since a replay changes device or precision) and takes `steps` training steps with
// `config`'s optimizer, schedule, seed and batches, `repeats` times from the checkpoint's state.
// Throws pathbench::Error for an unreadable checkpoint, one without optimizer state, or one whose
// tensors differ from the model's.
Replay replay_training(const RunConfig& config, const Task& task, const std::string& checkpoint, int64_t steps,
                       int64_t repeats = 1, const std::optional<AttentionCallRecording>& recording = std::nullopt);

json replay_to_json(const Replay& replay);

}  // namespace pathbench
