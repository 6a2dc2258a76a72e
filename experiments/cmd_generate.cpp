// `pathbench generate --checkpoint F --prompt TEXT`: greedy generation from a trained checkpoint
// with any encoding. The prompt is text in the task's vocabulary (from --task, or the checkpoint's
// "task" metadata) or, without a vocabulary, token ids separated by spaces.
#include <fmt/format.h>

#include <sstream>

#include "core/error.h"
#include "core/model/generate.h"
#include "experiments/checkpoint.h"
#include "experiments/cli_checks.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"
#include "experiments/task_argument.h"
#include "tasks/task.h"

namespace pathbench {

namespace {

struct GenerateOptions {
  std::string checkpoint, prompt, task, out;
  int64_t count = 16;
};

// Splits text into symbols of the vocabulary: on its separator, or (empty separator) by longest
// match at each position.
std::vector<int32_t> parse_prompt(const Vocabulary& vocabulary, const std::string& text) {
  std::vector<int32_t> tokens;
  auto id_of = [&](const std::string& symbol) {
    for (size_t i = 0; i < vocabulary.symbols.size(); ++i)
      if (vocabulary.symbols[i] == symbol) return int32_t(i);
    throw Error(fmt::format("generate: prompt symbol '{}' is not in the task's vocabulary", symbol));
  };
  if (!vocabulary.separator.empty()) {
    size_t pos = 0;
    while (pos <= text.size()) {
      const size_t next = std::min(text.find(vocabulary.separator, pos), text.size());
      if (next > pos) tokens.push_back(id_of(text.substr(pos, next - pos)));
      pos = next + vocabulary.separator.size();
    }
    return tokens;
  }
  for (size_t pos = 0; pos < text.size();) {
    size_t best = 0;
    int32_t best_id = -1;
    for (size_t i = 0; i < vocabulary.symbols.size(); ++i) {
      const std::string& s = vocabulary.symbols[i];
      if (s.size() > best && text.compare(pos, s.size(), s) == 0) best = s.size(), best_id = int32_t(i);
    }
    if (best_id < 0) throw Error(fmt::format("generate: prompt text at offset {} matches no symbol of the task", pos));
    tokens.push_back(best_id);
    pos += best;
  }
  return tokens;
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> tokens;
  std::istringstream in(text);
  std::string piece;
  while (in >> piece) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(piece, &used);
    } catch (const std::exception&) {
    }
    if (used != piece.size() || id < 0 || id > INT32_MAX)
      throw Error(fmt::format("generate: prompt piece '{}' is not a token id (no task vocabulary is known)", piece));
    tokens.push_back(int32_t(id));
  }
  return tokens;
}

void run_generate(const GenerateOptions& o) {
  LoadedCheckpoint loaded = load_checkpoint(o.checkpoint);
  std::unique_ptr<Task> task;
  if (!o.task.empty()) {
    std::string where;
    const json config = load_task_config(o.task, "--task", where);
    task = make_task(config, where);
  } else if (auto it = loaded.metadata.find("task"); it != loaded.metadata.end()) {
    json config;
    try {
      config = json::parse(it->second);
    } catch (const json::parse_error&) {
      throw Error(fmt::format("{}: metadata 'task' is not JSON", o.checkpoint));
    }
    task = make_task(config, o.checkpoint + ": task");
  }
  const int64_t vocab = loaded.model->config().vocab_size;
  if (task && task->vocabulary().size() != vocab)
    throw Error(fmt::format("generate: the task has {} symbols but the checkpoint's model has vocabulary {}",
                            task->vocabulary().size(), vocab));
  const std::vector<int32_t> prompt = task ? parse_prompt(task->vocabulary(), o.prompt) : parse_ids(o.prompt);
  const std::vector<int32_t> generated = greedy_generate(*loaded.model, prompt, o.count);
  auto render = [&](const std::vector<int32_t>& tokens) {
    return task ? task->vocabulary().render(tokens) : fmt::format("{}", fmt::join(tokens, " "));
  };
  fmt::print("prompt ({} tokens): {}\ngenerated ({} tokens): {}\n", prompt.size(), render(prompt), generated.size(),
             render(generated));
  if (!o.out.empty()) {
    json doc{{"checkpoint", o.checkpoint},        {"encoding", loaded.model->config().encoding},
             {"prompt_tokens", prompt},           {"generated_tokens", generated},
             {"generated_text", render(generated)}};
    write_file_atomically(o.out, doc.dump(2) + "\n");
  }
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto opts = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "greedy generation from a checkpoint and a prompt (any encoding)");
  cmd->add_option("--checkpoint", opts->checkpoint, "model checkpoint (safetensors)")->required();
  cmd->add_option("--prompt", opts->prompt, "prompt text in the task's symbols, or token ids without a task")
      ->required();
  cmd->add_option("--new", opts->count, "tokens to generate (at most 100,000; default 16)")
      ->check(CLI::Range(int64_t(0), int64_t(100000)));
  cmd->add_option("--task", opts->task,
                  "task config (JSON or file) whose vocabulary reads the prompt; default: the checkpoint's "
                  "'task' metadata");
  cmd->add_option("--out", opts->out, "also write the tokens as JSON to this file");
  cmd->callback([opts]() { run_generate(*opts); });
}

}  // namespace pathbench
