// The list of subcommands.
#include "experiments/commands.h"

namespace pathbench {

void add_commands(CLI::App& app) {
  add_run_command(app);
  add_table_command(app);
  add_plot_command(app);
  add_slurm_command(app);
  add_config_reference_command(app);
  add_bench_command(app);
  add_bench_tasks_command(app);
  add_sample_command(app);
  add_fisher_command(app);
  add_power_command(app);
  add_count_ceiling_command(app);
  add_op_command(app);
  add_generate_command(app);
  add_replay_command(app);
  add_bench_attention_command(app);
}

}  // namespace pathbench
