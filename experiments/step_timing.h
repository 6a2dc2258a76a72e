// Timing of training steps and evaluation batches of the standard model on the CPU or the GPU
// (shared by `bench` and `bench-tasks`).
#pragma once
#include <cstdint>
#include <string>

#include "core/model/batch.h"
#include "core/optim/training_backend.h"

namespace pathbench {

// The standard benchmark: model shape and batch.
struct StepBenchShape {
  int64_t layers = 2, width = 128, heads = 4, length = 256, batch = 16, vocab = 8;
  std::string mlp = "swiglu";
};

struct StepTiming {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  // The median of the device's own time per step (TrainStep::device_ms); < 0 where not measured
  // (the CPU, evaluation batches). median_ms minus this is about what the host adds to a step.
  double device_median_ms = -1;
  // The median of the host's batch preparation per step (TrainStep::prepare_ms), where measured.
  double prepare_median_ms = -1;
  int64_t parameters = 0;
  double final_loss = 0;
};

// Random tokens; the target of each position is the next token (timing does not depend on data).
TokenBatch random_batch(int64_t batch, int64_t length, int64_t vocab, uint64_t seed);

// Times `steps` training steps (TrainingBackend::step, which waits for the device), after `warmup`
// untimed ones, of the model of `shape` with position encoding `encoding` on a random batch of
// `shape`, on the device of `backend`.
StepTiming time_training_steps(const StepBenchShape& shape, const std::string& encoding, int warmup, int steps,
                               const BackendOptions& backend = {});

// Times `batches` evaluation batches of `eval_batch` sequences (TrainingBackend::predict: the
// forward, the masked loss and every position's argmax brought back, as a run's evaluation does),
// after `warmup` untimed ones, of the same model, untrained; final_loss is the last batch's loss
// (parameters stays 0: the training timing reports them).
StepTiming time_evaluation_batches(const StepBenchShape& shape, const std::string& encoding, int64_t eval_batch,
                                   int warmup, int batches, const BackendOptions& backend = {});

}  // namespace pathbench
