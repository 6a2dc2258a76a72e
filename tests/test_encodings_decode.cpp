// Incremental decoding: PaTH's in-place key cache against the parallel forward at every position
// (kernel level, with and without the gate), every encoding's model-level decode against the full
// forward's logits, and greedy generation against argmax over repeated full forwards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include <filesystem>

#include "core/attention/fox/fox.h"
#include "core/attention/path/path.h"
#include "core/model/generate.h"
#include "core/model/transformer.h"
#include "encoding_test_support.h"
#include "experiments/checkpoint.h"
#include "experiments/commands.h"
#include "experiments/file_output.h"

namespace pathbench {
namespace {

using test::random_normal;

TEST_CASE("PaTH decoding step by step equals the parallel forward at every position", "[encodings]") {
  test::SingleThread single;
  for (bool gate : {false, true}) {
    const int64_t bh = 3, len = 40, d = 8;
    auto q = random_normal(bh * len * d, 21, "q"), k = random_normal(bh * len * d, 21, "k"),
         v = random_normal(bh * len * d, 21, "v");
    auto w = test::random_unit_rows(bh * len, d, 21, "w");
    auto beta = test::random_uniform(bh * len, 0.0, 2.0, 21, "beta");
    auto cum = test::random_uniform(bh * len, -0.5, 0.0, 21, "log_gate");
    cumulative_sum(cum.data(), cum.data(), bh, len);
    PathAttentionArgs<double> a{bh, len, d, 1.0 / std::sqrt(double(d)), q.data(), k.data(), v.data(), w.data(),
                                beta.data(), gate ? cum.data() : nullptr, 0.8};
    std::vector<double> o(q.size()), lse(bh * len);
    path_attention_forward(a, o.data(), lse.data());
    PathDecodeCache<double> cache = path_decode_start<double>(bh, d);
    std::vector<double> qt(bh * d), kt(bh * d), vt(bh * d), wt(bh * d), bt(bh), ct(bh), ot(bh * d);
    double worst = 0;
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t s = 0; s < bh; ++s) {
        const int64_t row = s * len + t;
        std::copy_n(&q[row * d], d, &qt[s * d]);
        std::copy_n(&k[row * d], d, &kt[s * d]);
        std::copy_n(&v[row * d], d, &vt[s * d]);
        std::copy_n(&w[row * d], d, &wt[s * d]);
        bt[s] = beta[row];
        ct[s] = cum[row];
      }
      path_decode_step(cache, qt.data(), kt.data(), vt.data(), wt.data(), bt.data(), gate ? ct.data() : nullptr,
                       a.scale, a.gate_scale, ot.data());
      for (int64_t s = 0; s < bh; ++s)
        worst = std::max(worst, test::max_abs_diff(&ot[s * d], &o[(s * len + t) * d], d));
    }
    INFO("gate " << gate);
    CHECK(worst < 1e-12);
  }
}

ModelConfig decode_config(const std::string& encoding) {
  ModelConfig c;
  c.vocab_size = 7;
  c.n_layers = 2;
  c.d_model = 12;
  c.n_heads = 2;
  c.mlp_hidden = 16;
  c.encoding = encoding;
  c.init_std = 0.3;
  return ModelConfig::from_json(c.to_json(), "test model");
}

TEST_CASE("every encoding's incremental decoding equals the full forward at every position", "[encodings]") {
  test::SingleThread single;
  for (const auto& name : encoding_names()) {
    INFO(name);
    Transformer<double> model(decode_config(name));
    model.init_parameters(22);
    // Parameters away from their initialization (gates, β, convolution all in play).
    auto& values = model.params().values();
    const auto noise = random_normal(values.size(), 22, "noise", 0.2);
    for (size_t i = 0; i < values.size(); ++i) values[i] += noise[i];
    const int64_t batch = 2, len = 9, vocab = model.config().vocab_size;
    CounterRng rng(22, "tokens");
    std::vector<int32_t> tokens(batch * len);
    for (auto& t : tokens) t = int32_t(rng.below(vocab));
    model.forward(tokens.data(), batch, len);
    const std::vector<double> full = model.logits();  // [B·T, V]
    auto state = model.start_decode(batch);
    std::vector<double> logits(batch * vocab);
    double worst = 0;
    for (int64_t t = 0; t < len; ++t) {
      const int32_t step[2] = {tokens[t], tokens[len + t]};
      model.decode_step(state, step, logits.data());
      for (int64_t b = 0; b < batch; ++b)
        worst = std::max(worst, test::max_abs_diff(&logits[b * vocab], &full[(b * len + t) * vocab], vocab));
    }
    CHECK(worst < 1e-12);
  }
}

TEST_CASE("greedy generation equals argmax over repeated full forwards", "[encodings]") {
  test::SingleThread single;
  for (const std::string name : {"rope", "path_fox"}) {
    INFO(name);
    Transformer<double> model(decode_config(name));
    model.init_parameters(23);
    const std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
    const std::vector<int32_t> generated = greedy_generate(model, prompt, 6);
    std::vector<int32_t> seq = prompt, expected;
    const int64_t vocab = model.config().vocab_size;
    for (int i = 0; i < 6; ++i) {
      model.forward(seq.data(), 1, int64_t(seq.size()));
      const double* last = model.logits().data() + (seq.size() - 1) * vocab;
      const int32_t next = int32_t(std::max_element(last, last + vocab) - last);
      expected.push_back(next);
      seq.push_back(next);
    }
    CHECK(generated == expected);
  }
}

TEST_CASE("greedy generation rejects an empty prompt and tokens outside the vocabulary", "[encodings]") {
  Transformer<double> model(decode_config("path"));
  model.init_parameters(24);
  CHECK_THROWS_WITH(greedy_generate(model, {}, 3), Catch::Contains("prompt has no tokens"));
  CHECK_THROWS_WITH(greedy_generate(model, {1, 9}, 3), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("generate command: prompt in the task's symbols, greedy tokens from the checkpoint", "[encodings]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("pathbench_generate_test_{}", ::getpid());
  fs::create_directories(dir);
  const std::string ckpt = (dir / "model.safetensors").string(), out = (dir / "gen.json").string();
  ModelConfig config = decode_config("path_fox");
  config.vocab_size = 6;  // flip-flop: w r i 0 1 <bos>
  Transformer<float> model(config);
  model.init_parameters(25);
  save_checkpoint(ckpt, model, nullptr, {{"task", R"({"name": "flipflop"})"}});
  auto run = [&](std::vector<std::string> args) {
    CLI::App app;
    add_generate_command(app);
    args.insert(args.begin(), {"pathbench", "generate", "--checkpoint", ckpt});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app.parse(int(argv.size()), argv.data());
  };
  run({"--prompt", "<bos> w 1 i 0 r", "--new", "5", "--out", out});
  const json doc = json::parse(read_file(out));
  CHECK(doc["prompt_tokens"] == std::vector<int32_t>{5, 0, 4, 2, 3, 1});
  CHECK(doc["generated_tokens"] == greedy_generate(model, {5, 0, 4, 2, 3, 1}, 5));
  CHECK_THROWS_WITH(run({"--prompt", "<bos> w x"}), Catch::Contains("prompt symbol 'x' is not in the task's vocabulary"));
  save_checkpoint(ckpt, model, nullptr);  // no task metadata: the prompt is token ids
  run({"--prompt", "5 0 4", "--new", "2", "--out", out});
  CHECK(json::parse(read_file(out))["generated_tokens"] == greedy_generate(model, {5, 0, 4}, 2));
  CHECK_THROWS_WITH(run({"--prompt", "5 w"}), Catch::Contains("prompt piece 'w' is not a token id"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pathbench
