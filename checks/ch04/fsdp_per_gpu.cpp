// ch04.fsdp_per_gpu — 「FSDP 8 卡切状态：每卡 16 GB 放得下全量」 (Llama-3-8B on 8 x H100 80 GB)
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/ledger.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void fsdp_per_gpu(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec gpu = ref::load_hardware_spec(ctx.input_path("hardware"));
  const int shards = ctx.input("gpus").get<int>();

  // Run: the full fine-tune state sharded evenly (FSDP full shard / ZeRO-3).
  const double state =
      static_cast<double>(ref::count_params(cfg).total()) * ref::bytes_per_param(ref::mixed_precision_adamw_state());
  const double per_gpu = state / shards;

  // Verify.
  ctx.measure(ref::gigabytes(per_gpu), "GB");
  ctx.measure_bool("fits", per_gpu < gpu.memory_bytes);
  ctx.measure("headroom_for_activations", ref::gigabytes(gpu.memory_bytes - per_gpu), "GB");
  ctx.measure("card_memory", static_cast<double>(gpu.memory_bytes), "B");  // the card the series names, as read
  ctx.assumption("weights, gradients and optimizer state all sharded evenly over " + std::to_string(shards) +
                 " GPUs; the gathered layer being computed and activations come on top");
  ctx.alternative("sharded over 4 GPUs", state / 4 / 1e9, "GB", "half the GPUs");
  if (!ctx.part_selected("measured")) {
    ctx.pending("the measured part: not selected (the run asked for other kinds)");
    return;
  }
  // The measured model's config, read before the run (a bad one costs no processes): its count is held below.
  const ref::ModelConfig measured = ref::load_model_config(ctx.input_path("measure_config"));
  // Measured: PyTorch FSDP2 (fully_shard) over `gpus` real processes (gloo on the CPU, forked by the driver; NCCL on
  // GPUs, started by torchrun), one AdamW step of the Llama-shaped decoder; each rank counts the bytes of its shards
  // (checks/ch04/fsdp_per_gpu.py).
  const nlohmann::json r = claimcheck::run_python_driver(
      ctx, "checks/ch04/fsdp_per_gpu.py",
      {"--config", ctx.input_path("measure_config").string(), "--world", std::to_string(shards), "--backend", "gloo"});
  if (r.contains("skip")) {
    ctx.pending("the measured part (FSDP2 over " + std::to_string(shards) +
                " processes): " + r["skip"].get<std::string>());
    return;
  }
  claimcheck::forward_driver_result(ctx, r);
  // The model the ranks sharded, against the answer key's count for its config: every figure above is a ratio of its
  // own sizes, which a model built apart from its config (a head tied that is not, a width misread) keeps.
  const nlohmann::json n = r.contains("details") && r["details"].is_object()
                               ? r["details"].value("n_params", nlohmann::json())
                               : nlohmann::json();
  if (!n.is_number() || !(n.get<double>() > 0))
    throw std::runtime_error("checks/ch04/fsdp_per_gpu.py: field 'details.n_params': no parameter count reported");
  ctx.measure("params_vs_ledger", n.get<double>() / static_cast<double>(ref::count_params(measured).total()), "ratio");
}
CLAIMCHECK_REGISTER(fsdp_per_gpu)
    .claim("ch04.fsdp_per_gpu")
    .derives("ideal_shard_fraction", claimcheck::Source::reference);
