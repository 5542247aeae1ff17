// What `nnperf report DIR` rebuilds before it reads DIR: the outputs the jobs' reporters render
// from saved records, where they are missing (a folder copied with its JSON records alone, or a
// CSV deleted). Each is rendered by the job's own reporter, so the bytes are those the job wrote.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace nnperf {

// Under `dir` (recursively):
// - a train_records.json without its training_metrics.csv, (for an MLP run) its
//   activation_timings.csv or the TensorBoard event file its context names: all rebuilt
//   (render_train_csvs / render_cnn_train_csv, render_tensorboard);
// - an mlp_bench.json without its mlp_bench.csv or its figure (plots/iteration_time.dat, .gp
//   and, where gnuplot is installed, .svg and .png; so for every figure below): rebuilt
//   (render_mlp_bench_outputs);
// - a profile sweep's profile_records.jsonl (or an earlier nnperf's profile_records.json) without
//   its <stem>_overall.csv, <stem>_layers.csv or (with --layers) a size's trace: all rebuilt
//   (render_profile_outputs);
// - a training run's one_step.json (--profile-one-step) without its one_step_layers.csv or
//   one_step_trace.json: both rebuilt (render_one_step_profile);
// - a peaks.json env with a bandwidth sweep without its figure (peaks_bandwidth_<env>):
//   rebuilt (peaks_bandwidth_plot);
// - a roofline.json in a roofline's folder (run.json job "roofline") without its
//   roofline_points.csv or figure: rebuilt (roofline_points_csv, roofline_plot);
// - a merged training sweep's sweep_records.json without its metrics.csv: rebuilt from the
//   records' text in context.columns' order (a merged profile sweep's group folder holds the
//   joined profile_records.jsonl, rebuilt as above); the training driver's metrics_records.json
//   without its metrics.csv: rebuilt the same way;
// - then, once the runs' CSVs are back, an activation study (a run.json of job "activations")
//   without its summary.csv, report.md or a figure: rebuilt by the study's analysis
//   (analyse_activation_study; the command line is run.json's);
// The reporter renders into a scratch folder beside the record, and only the missing files are
// moved into place (each a rename: whole or absent); files that exist are never touched. Returns
// one line per record rendered, or why it could not be (an unreadable record, records that lack
// sizes a resumed sweep measured before they were kept, a folder not writable): never fatal, the
// report goes on without it.
std::vector<std::string> rerender_missing_outputs(const std::filesystem::path& dir);

}  // namespace nnperf
