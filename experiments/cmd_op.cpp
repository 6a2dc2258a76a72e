// `pathbench op --op NAME --input IN.safetensors --output OUT.safetensors [--device cuda --precision
// fp32|bf16]`: evaluates one attention op (experiments/attention_op.h) on the CPU or through its GPU
// kernels and writes its output and input gradients; on any bad input it writes nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.h"
#include "core/io/safetensors.h"
#include "experiments/attention_op.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"

namespace pathbench {

namespace {

struct OpCommandOptions {
  AttentionOpOptions op;
  std::string input, output, precision;
};

void run_op(OpCommandOptions& o) {
  if (!o.precision.empty()) {
    if (o.op.device != "cuda")
      throw Error("op: --precision applies to --device cuda only (the CPU computes in the inputs' dtype)");
    parse_precision(o.precision, o.op.precision);
  }
  const SafetensorsContent input = parse_safetensors(read_file(o.input), o.input);
  const SafetensorsContent output = evaluate_attention_op(o.op, input, o.input);
  write_file_atomically(o.output, serialize_safetensors(output));
  std::vector<std::string> names;
  for (const auto& [name, t] : output.tensors) names.push_back(name);
  fmt::print("{}: wrote {} ({})\n", o.op.op, o.output, fmt::join(names, ", "));
}

}  // namespace

void add_op_command(CLI::App& app) {
  auto opts = std::make_shared<OpCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "op", "evaluate one attention op on tensors from a safetensors file; write o and every input gradient");
  cmd->add_option("--op", opts->op.op, fmt::format("the op: {}", fmt::join(attention_op_names(), ", ")))
      ->required()
      ->check(CLI::IsMember(attention_op_names()));
  cmd->add_option("--input", opts->input,
                  "safetensors file with q, k, v, do [..., T, D] (+ w [..., T, D], beta [..., T] for path*; "
                  "g [..., T] log forget gates for fox, path_fox)")
      ->required();
  cmd->add_option("--output", opts->output, "safetensors file to write (o, dq, dk, dv, and dw, dbeta, dg)")
      ->required();
  cmd->add_option("--device", opts->op.device,
                  "cpu (default: in the inputs' dtype) or cuda (the op's GPU kernels)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--precision", opts->precision, "with --device cuda: storage of q, k, v, w and the gradients, "
                                                  "fp32 (default) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--scale", opts->op.settings.scale, "logit scale (default 1/sqrt(D))")->check(finite_number(true));
  CLI::Option* gate_scale = cmd->add_option("--gate-scale", opts->op.settings.gate_scale,
                                            "multiplier of the gate bias c_i − c_j (fox, path_fox)")
                                ->check(finite_number(false));
  CLI::Option* rope_base =
      cmd->add_option("--rope-base", opts->op.settings.rope_base, "rotation base (rope)")->check(finite_number(true));
  CLI::Option* remainder = cmd->add_flag("--remainder-to-current", opts->op.settings.remainder_to_current,
                                         "sba: add the unassigned weight to the current token's value");
  cmd->callback([opts, gate_scale, rope_base, remainder]() {
    const std::string& op = opts->op.op;
    // An option the op does not use is a mistake in the call, not something to ignore.
    const std::pair<CLI::Option*, const char*> setting_options[] = {
        {gate_scale, "gate_scale"}, {rope_base, "rope_base"}, {remainder, "remainder_to_current"}};
    for (const auto& [option, setting] : setting_options) {
      if (option->count() == 0) continue;
      std::vector<std::string> users;
      for (const auto& info : attention_ops())
        if (info.uses_setting(setting)) users.push_back(info.name);
      if (std::find(users.begin(), users.end(), op) == users.end())
        throw Error(fmt::format("op: {} applies to {} only, not to --op {}", option->get_name(),
                                fmt::join(users, ", "), op));
    }
    run_op(*opts);
  });
}

}  // namespace pathbench
