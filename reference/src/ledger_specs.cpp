// The ledger's JSON inputs other than the model config: the GPT shape of chapter 3's tiny Transformer, a
// quantisation format, a hardware spec; and the readers every loader shares (ledger_internal.h): a file's text, its
// JSON, and the SpecError naming the file and field.
#include "claimcheck/ref/ledger.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "claimcheck/base/json_depth.h"

#include "ledger_internal.h"

namespace claimcheck::ref {
namespace fs = std::filesystem;
using nlohmann::json;

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what) {
  throw SpecError(file + ": field '" + field + "': " + what);
}

json parse_text(const std::string& text, const std::string& file) {
  try {
    return json::parse(text, depth_guard());
  } catch (const std::exception& e) {  // parse_error, out_of_range beyond a double (1e400), JsonTooDeep
    fail(file, "(json)", std::string("malformed JSON: ") + e.what());
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), "(file)", "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace {

std::int64_t positive_int(const json& j, const std::string& file, const char* key, bool required = true,
                          std::int64_t dflt = 0) {
  if (!j.contains(key) || j.at(key).is_null()) {
    if (required) fail(file, key, "missing");
    return dflt;
  }
  const json& v = j.at(key);
  if (!v.is_number_integer()) {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!std::isfinite(d)) fail(file, key, "not a finite number");
      if (d != std::floor(d)) fail(file, key, "expected an integer, got " + shown(v));
      if (d <= 0) fail(file, key, "must be positive, got " + shown(v));
      if (d > kMaxConfigInt) fail(file, key, "implausibly large, got " + shown(v) + " (the ledger accepts up to 2^31)");
      return static_cast<std::int64_t>(d);
    }
    fail(file, key, std::string("expected an integer, got ") + v.type_name());
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxConfigInt))
    fail(file, key, "implausibly large, got " + shown(v) + " (the ledger accepts up to 2^31)");
  const auto n = v.get<std::int64_t>();
  if (n <= 0) fail(file, key, "must be positive, got " + shown(v));
  if (n > kMaxConfigInt) fail(file, key, "implausibly large, got " + shown(v) + " (the ledger accepts up to 2^31)");
  return n;
}

bool get_bool(const json& j, const std::string& file, const char* key, bool dflt) {
  if (!j.contains(key) || j.at(key).is_null()) return dflt;
  if (!j.at(key).is_boolean()) fail(file, key, std::string("expected true or false, got ") + shown(j.at(key)));
  return j.at(key).get<bool>();
}

double positive_number(const json& j, const std::string& file, const char* key) {
  if (!j.contains(key)) fail(file, key, "missing");
  const json& v = j.at(key);
  if (!v.is_number()) fail(file, key, std::string("expected a number, got ") + v.type_name());
  const double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) fail(file, key, "must be a positive finite number, got " + shown(v));
  return d;
}

}  // namespace

GptShape parse_gpt_shape(const std::string& json_text, const std::string& where) {
  const json j = parse_text(json_text, where);
  if (!j.is_object()) fail(where, "(json)", "expected an object");
  GptShape s;
  s.vocab = positive_int(j, where, "vocab");
  s.d_model = positive_int(j, where, "d_model");
  s.n_layer = positive_int(j, where, "n_layer");
  s.n_head = positive_int(j, where, "n_head");
  s.d_ff = positive_int(j, where, "d_ff");
  s.context = positive_int(j, where, "context");
  if (s.d_model % s.n_head != 0)
    fail(where, "n_head", std::to_string(s.n_head) + " does not divide d_model " + std::to_string(s.d_model));
  return s;
}

// A key the format does not know is a typo that would otherwise read as its default ("keep_bf_16": every weight
// quantised, the name still saying otherwise).
void known_keys_only(const json& j, const std::string& file, std::initializer_list<const char*> known) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (std::any_of(known.begin(), known.end(), [&](const char* n) { return k == n; })) continue;
    std::string list;
    for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
    fail(file, k, "unknown key (known: " + list + ")");
  }
}

// ---- quantisation -------------------------------------------------------------
QuantFormat parse_quant_format(const std::string& text, const std::string& where) {
  const json j = parse_text(text, where);
  if (!j.is_object()) fail(where, "(json)", "a quantisation format is an object");
  known_keys_only(j, where,
                  {"name", "why", "bits", "block_size", "scale_bytes", "double_quant", "dq_block_size", "keep_bf16",
                   "levels_source", "levels"});
  QuantFormat q;
  if (j.contains("name") && !j.at("name").is_string())
    fail(where, "name", std::string("expected a string, got ") + j.at("name").type_name());
  q.name = j.value("name", "");
  const std::int64_t bits = positive_int(j, where, "bits");  // compared before the cast: 2^31 is no int
  if (bits > 16) fail(where, "bits", "more than 16");
  q.bits = static_cast<int>(bits);
  q.block_size = j.contains("block_size") && !j.at("block_size").is_null() ? positive_int(j, where, "block_size") : 0;
  if (q.block_size > 0) {
    const std::int64_t scale_bytes = positive_int(j, where, "scale_bytes");
    if (scale_bytes > std::numeric_limits<int>::max())
      fail(where, "scale_bytes", "implausibly large, got " + shown(j.at("scale_bytes")));
    q.scale_bytes = static_cast<int>(scale_bytes);
  }
  q.double_quant = get_bool(j, where, "double_quant", false);
  if (q.double_quant) {
    if (q.block_size == 0) fail(where, "double_quant", "needs a block_size");
    q.dq_block_size = positive_int(j, where, "dq_block_size", false, 256);
  }
  if (j.contains("keep_bf16")) {
    if (!j.at("keep_bf16").is_array()) fail(where, "keep_bf16", "expected a list of module names");
    for (const auto& m : j.at("keep_bf16")) {
      if (!m.is_string()) fail(where, "keep_bf16", "expected module names");
      const auto s = m.get<std::string>();
      if (s != "embed_tokens" && s != "lm_head")
        fail(where, "keep_bf16", "unknown module '" + s + "' (embed_tokens, lm_head)");
      q.keep_bf16.push_back(s);
    }
  }
  return q;
}

QuantFormat load_quant_format(const fs::path& file) { return parse_quant_format(read_file(file), file.string()); }

// ---- hardware -----------------------------------------------------------------
HardwareSpec load_hardware_spec(const fs::path& path) { return parse_hardware_spec(read_file(path), path.string()); }

HardwareSpec parse_hardware_spec(const std::string& text, const std::string& file) {
  const json j = parse_text(text, file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a hardware spec)");
  HardwareSpec h;
  h.file = file;
  if (!j.contains("name") || !j.at("name").is_string()) fail(file, "name", "missing");
  known_keys_only(j, file, {"name", "source", "why", "memory_bytes", "hbm_bandwidth_bytes_per_s", "bf16_dense_flops"});
  h.name = j.at("name").get<std::string>();
  // A machine's sizes and rates, in bytes, bytes per second and FLOP/s, lie far inside [1e6, 1e30]: below, a figure
  // typed in another unit (3.35 for 3.35 TB/s); beyond, the times and ratios derived overflow (1 / 5e-324).
  auto plausible = [&](const char* key) {
    const double d = positive_number(j, file, key);
    if (d < 1e6 || d > 1e30)
      fail(file, key, "implausible, got " + shown(j.at(key)) + " (in base units, the ledger accepts 1e6 to 1e30)");
    return d;
  };
  // (A planted fault reads the card's memory as GiB, as nvidia-smi prints it.)
  h.memory_bytes = plausible("memory_bytes") * (ledger_fault("ledger_spec_memory_gib") ? 1.073741824 : 1);
  h.bandwidth = plausible("hbm_bandwidth_bytes_per_s");
  // (A planted fault takes the datasheet's sparsity figure, twice the dense one.)
  h.peak_flops = plausible("bf16_dense_flops") * (ledger_fault("ledger_spec_sparse_flops") ? 2 : 1);
  return h;
}

}  // namespace claimcheck::ref
