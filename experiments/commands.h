// Registration of every subcommand of the CLI. Each add_*_command lives in its own cmd_*.cpp file
// and runs its work from the parse callback, so errors reach main's handler.
#pragma once
#include <CLI/CLI.hpp>

namespace pathbench {

void add_commands(CLI::App& app);

void add_bench_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_table_command(CLI::App& app);
void add_config_reference_command(CLI::App& app);
void add_slurm_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_bench_tasks_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_op_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_bench_attention_command(CLI::App& app);
void add_power_command(CLI::App& app);
void add_fisher_command(CLI::App& app);
void add_count_ceiling_command(CLI::App& app);
void add_replay_command(CLI::App& app);

}  // namespace pathbench
