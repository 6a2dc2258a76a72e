// `pathbench op [--op NAME] --input IN.safetensors --output OUT.safetensors [--device cuda --precision
// fp32|bf16]`: evaluates one attention op (experiments/attention_op.h) on the CPU or through its GPU
// kernels and writes its output and input gradients; on any bad input it writes nothing. A recorded
// call's metadata (core/attention/op_call_record.h) supplies the op and its settings.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

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
  // The settings given on the command line (the others may come from a recorded call's metadata).
  bool scale_given = false, gate_scale_given = false, rope_base_given = false, remainder_given = false;
};

// One op setting as the command line and a recorded call's metadata name it.
struct SettingSource {
  const char* key;     // metadata key, also the setting's name in the op registry ("scale": every op)
  const char* option;  // command-line option
  bool given;
  double* number;      // the setting, or null for the flag
  bool* flag;
};

// A recorded call names its op and settings in its metadata: they become the defaults, and a
// command-line value that contradicts them is an error (the call would not be evaluated again).
// Settings the op does not use are ignored in the metadata and refused on the command line.
void resolve_op_and_settings(OpCommandOptions& o, const SafetensorsContent& input) {
  const auto recorded = [&](const std::string& key) -> const std::string* {
    const auto it = input.metadata.find(key);
    return it == input.metadata.end() ? nullptr : &it->second;
  };
  if (const std::string* op = recorded("op")) {
    if (o.op.op.empty()) {
      const std::vector<std::string> names = attention_op_names();
      if (std::find(names.begin(), names.end(), *op) == names.end())
        throw Error(fmt::format("op: {}: metadata op is '{}', which this pathbench does not have (it has {})",
                                o.input, *op, fmt::join(names, ", ")));
      o.op.op = *op;
    } else if (o.op.op != *op) {
      throw Error(fmt::format("op: {} holds a recorded {} call (its metadata op); --op {} would not evaluate it "
                              "again (leave --op out)",
                              o.input, *op, o.op.op));
    }
  }
  if (o.op.op.empty()) throw Error(fmt::format("op: --op is required ({} names no op in its metadata)", o.input));
  const AttentionOpInfo& info = find_attention_op(o.op.op);
  OpSettings& st = o.op.settings;
  const SettingSource sources[] = {{"scale", "--scale", o.scale_given, &st.scale, nullptr},
                                   {"gate_scale", "--gate-scale", o.gate_scale_given, &st.gate_scale, nullptr},
                                   {"rope_base", "--rope-base", o.rope_base_given, &st.rope_base, nullptr},
                                   {"remainder_to_current", "--remainder-to-current", o.remainder_given, nullptr,
                                    &st.remainder_to_current}};
  for (const SettingSource& src : sources) {
    const bool used = std::string(src.key) == "scale" || info.uses_setting(src.key);
    if (!used) {
      if (!src.given) continue;
      std::vector<std::string> users;
      for (const auto& other : attention_ops())
        if (other.uses_setting(src.key)) users.push_back(other.name);
      throw Error(fmt::format("op: {} applies to {} only, not to --op {}", src.option, fmt::join(users, ", "),
                              o.op.op));
    }
    const std::string* text = recorded(src.key);
    if (!text) continue;
    if (src.flag) {
      if (*text != "true" && *text != "false")
        throw Error(fmt::format("op: {}: metadata {} is '{}' (true or false)", o.input, src.key, *text));
      const bool value = *text == "true";
      if (src.given && *src.flag != value)
        throw Error(fmt::format("op: {} contradicts {} = {} recorded in {}'s metadata (leave the option out)",
                                src.option, src.key, *text, o.input));
      *src.flag = value;
      continue;
    }
    char* end = nullptr;
    const double value = std::strtod(text->c_str(), &end);
    if (text->empty() || *end != '\0' || !std::isfinite(value))
      throw Error(fmt::format("op: {}: metadata {} is '{}' (a finite number)", o.input, src.key, *text));
    if (src.given && *src.number != value)
      throw Error(fmt::format("op: {} {} contradicts {} = {} recorded in {}'s metadata (leave the option out)",
                              src.option, *src.number, src.key, *text, o.input));
    *src.number = value;
  }
}

void run_op(OpCommandOptions& o) {
  if (!o.precision.empty()) {
    if (o.op.device != "cuda")
      throw Error("op: --precision applies to --device cuda only (the CPU computes in the inputs' dtype)");
    parse_precision(o.precision, o.op.precision);
  }
  const SafetensorsContent input = parse_safetensors(read_file(o.input), o.input);
  resolve_op_and_settings(o, input);
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
  cmd->add_option("--op", opts->op.op,
                  fmt::format("the op: {} (default: the op a recorded call's metadata names)",
                              fmt::join(attention_op_names(), ", ")))
      ->check(CLI::IsMember(attention_op_names()));
  cmd->add_option("--input", opts->input,
                  "safetensors file with q, k, v, do [..., T, D] (+ w [..., T, D], beta [..., T] for path*; "
                  "g [..., T] log forget gates for fox, path_fox); a call recorded by `replay --record-attention` "
                  "also gives the op and its settings")
      ->required();
  cmd->add_option("--output", opts->output, "safetensors file to write (o, dq, dk, dv, and dw, dbeta, dg)")
      ->required();
  cmd->add_option("--device", opts->op.device,
                  "cpu (default: in the inputs' dtype) or cuda (the op's GPU kernels)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--precision", opts->precision, "with --device cuda: storage of q, k, v, w and the gradients, "
                                                  "fp32 (default) or bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  CLI::Option* scale = cmd->add_option("--scale", opts->op.settings.scale, "logit scale (default 1/sqrt(D))")
                           ->check(finite_number(true));
  CLI::Option* gate_scale = cmd->add_option("--gate-scale", opts->op.settings.gate_scale,
                                            "multiplier of the gate bias c_i − c_j (fox, path_fox; default 1)")
                                ->check(finite_number(false));
  CLI::Option* rope_base = cmd->add_option("--rope-base", opts->op.settings.rope_base, "rotation base (rope; default "
                                                                                       "10000)")
                               ->check(finite_number(true));
  CLI::Option* remainder = cmd->add_flag("--remainder-to-current", opts->op.settings.remainder_to_current,
                                         "sba: add the unassigned weight to the current token's value");
  cmd->callback([opts, scale, gate_scale, rope_base, remainder]() {
    opts->scale_given = scale->count() > 0;
    opts->gate_scale_given = gate_scale->count() > 0;
    opts->rope_base_given = rope_base->count() > 0;
    opts->remainder_given = remainder->count() > 0;
    run_op(*opts);
  });
}

}  // namespace pathbench
