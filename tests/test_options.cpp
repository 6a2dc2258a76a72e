// Strict option validation, the model config, safetensors parsing of malformed files, and the
// GPU wait policy from the environment.
#include <catch2/catch.hpp>

#include "core/device.h"
#include "core/error.h"
#include "core/io/safetensors.h"
#include "core/model/model_config.h"

using namespace pathbench;

TEST_CASE("options reject unknown keys, wrong types and out-of-range values", "[options]") {
  std::vector<OptionSpec> specs = {{"n", OptionType::Int, 3, "a count", 1.0, 10.0},
                                   {"p", OptionType::Float, 0.5, "a probability", 0.0, 1.0, {}, false, true},
                                   {"kind", OptionType::String, "a", "a kind", {}, {}, {"a", "b"}},
                                   {"name", OptionType::String, nullptr, "required"}};
  json ok = resolve_options(specs, {{"name", "x"}, {"n", 4}}, "cfg.json: task");
  CHECK(ok["n"] == 4);
  CHECK(ok["p"] == 0.5);
  CHECK(ok["kind"] == "a");
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"m", 1}}, "cfg.json: task"),
                    Catch::Contains("cfg.json: task") && Catch::Contains("unknown key 'm'"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"n", "4"}}, "w"), Catch::Contains("'n'") && Catch::Contains("wrong type"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"n", 2.5}}, "w"), Catch::Contains("wrong type"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"n", 11}}, "w"), Catch::Contains("11") && Catch::Contains("out of range"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"p", 1.0}}, "w"), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"name", "x"}, {"kind", "c"}}, "w"), Catch::Contains("one of a, b"));
  CHECK_THROWS_WITH(resolve_options(specs, json::object(), "w"), Catch::Contains("missing required key 'name'"));
}

TEST_CASE("integers without a bound of their own stop at 2^31 - 1", "[options]") {
  const std::vector<OptionSpec> specs = {{"steps", OptionType::Int, 1, "steps", 1.0},
                                         {"lengths", OptionType::IntList, json::array(), "lengths", 1.0}};
  CHECK(resolve_options(specs, {{"steps", 2147483647}}, "w")["steps"] == 2147483647);
  for (const json& big : {json(2147483648LL), json(1e30), json(1e308), json(9223372036854775807LL)})
    CHECK_THROWS_WITH(resolve_options(specs, {{"steps", big}}, "cfg.json: training"),
                      Catch::Contains("cfg.json: training: key 'steps'") && Catch::Contains("out of range") &&
                          Catch::Contains("<= 2147483647"));
  CHECK_THROWS_WITH(resolve_options(specs, {{"lengths", {4, 1e12}}}, "w"), Catch::Contains("'lengths'"));
}

TEST_CASE("model configs are validated strictly", "[options]") {
  CHECK(ModelConfig::from_json({{"encoding", "rope"}, {"d_model", 64}, {"n_heads", 2}}, "m").head_dim() == 32);
  CHECK_THROWS_WITH(ModelConfig::from_json({{"encoding", "nonexistent"}}, "m"), Catch::Contains("unknown encoding"));
  CHECK_THROWS_WITH(ModelConfig::from_json({{"d_model", 10}, {"n_heads", 3}}, "m"), Catch::Contains("n_heads"));
  CHECK_THROWS_WITH(ModelConfig::from_json({{"d_model", 9}, {"n_heads", 3}, {"encoding", "rope"}}, "m"),
                    Catch::Contains("even head dimension"));
  CHECK_THROWS_WITH(ModelConfig::from_json({{"encoding", "rope"}, {"encoding_options", {{"bas", 1}}}}, "m"),
                    Catch::Contains("unknown key 'bas'"));
  CHECK_THROWS_WITH(ModelConfig::from_json({{"mlp", "relu"}}, "m"), Catch::Contains("'mlp'"));
}

TEST_CASE("safetensors round-trip and reject malformed files", "[options][checkpoint]") {
  SafetensorsContent c;
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  std::vector<double> b = {0.5};
  c.tensors["a"] = make_tensor(a.data(), {2, 3});
  c.tensors["b"] = make_tensor(b.data(), {1});
  c.metadata["k"] = "v";
  std::string bytes = serialize_safetensors(c);
  CHECK(uint8_t(bytes[0]) % 8 == 0);  // header padded so tensor data starts 8-byte aligned
  SafetensorsContent back = parse_safetensors(bytes, "f");
  CHECK(tensor_values<float>(back.tensors.at("a"), "a") == a);
  CHECK(tensor_values<double>(back.tensors.at("b"), "b") == b);
  CHECK(back.tensors.at("a").shape == std::vector<int64_t>{2, 3});
  CHECK(back.metadata.at("k") == "v");
  CHECK_THROWS_WITH(parse_safetensors("abc", "f.st"), Catch::Contains("f.st"));
  CHECK_THROWS_AS(parse_safetensors(bytes.substr(0, bytes.size() - 4), "f"), Error);  // data cut short
  std::string huge = bytes;
  huge[7] = char(0x7f);  // header length beyond the file
  CHECK_THROWS_AS(parse_safetensors(huge, "f"), Error);

  // A hand-written file: header length (8 bytes, little-endian), header JSON, data.
  auto file = [](const std::string& header, size_t data_bytes) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
    return out + header + std::string(data_bytes, '\1');
  };
  CHECK_NOTHROW(parse_safetensors(file(R"({"x": {"dtype": "F32", "shape": [2, 4], "data_offsets": [0, 32]}})", 32), "f"));
  // A shape whose product overflows 64 bits (here to exactly 32 bytes) is refused, not trusted.
  CHECK_THROWS_WITH(
      parse_safetensors(file(R"({"x": {"dtype": "F32", "shape": [1, 24, 768614336404564651], "data_offsets": [0, 32]}})", 32), "f"),
      Catch::Contains("tensor 'x'") && Catch::Contains("larger than the file"));
  CHECK_THROWS_WITH(
      parse_safetensors(file(R"({"x": {"dtype": "F64", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})", 8), "f"),
      Catch::Contains("larger than the file"));
  // Two tensors over the same bytes.
  CHECK_THROWS_WITH(parse_safetensors(file(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                               "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 24), "f"),
                    Catch::Contains("'a' and 'b' overlap"));
}

TEST_CASE("PATHBENCH_CUDA_SYNC takes spin, yield or block, unset or empty leaves CUDA's default", "[options]") {
  CHECK(parse_gpu_wait(nullptr) == GpuWait::cuda_default);
  CHECK(parse_gpu_wait("") == GpuWait::cuda_default);
  CHECK(parse_gpu_wait("spin") == GpuWait::spin);
  CHECK(parse_gpu_wait("yield") == GpuWait::yield);
  CHECK(parse_gpu_wait("block") == GpuWait::block);
  for (const char* bad : {"Spin", "blocking", "1"})
    CHECK_THROWS_WITH(parse_gpu_wait(bad), Catch::Contains("PATHBENCH_CUDA_SYNC") && Catch::Contains(bad));
}
