// The machine model from measured ceilings (core/machine_model.h has the model itself): one env
// of a peaks.json, and the lookup the program installs as the model's source.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "nnperf/core/machine_model.h"

namespace nnperf {

// Where the model comes from, looked up on every call:
//  1. $NNPERF_PEAKS (a path; $NNPERF_PEAKS_ENV picks the env, else the host's or the only
//     one): an unreadable or malformed file is an nnperf::Error naming it;
//  2. ./peaks.json when it is JSON and has an env named after this host or exactly one env
//     (that env's fields must then be well formed: a broken one is an Error);
//  3. estimate_machine_model(cpu_info(), active_simd()).
MachineModel detect_machine_model();

// One env of a peaks.json document, in the layout `nnperf peaks` writes (compute_ceilings,
// memory_ceilings, machine.caches) or the older one (measured.fma_gflops_per_s_1thread,
// measured.triad_gbytes_per_s), or only the cloudml fields peak_gbps and peak_gflops.fp32
// (which both layouts carry and which are required). env "" = the env named after this host,
// else the only one. Figures measured at another SIMD level than `level` are scaled by the lane
// ratio; cache sizes missing from the file come from `cpu`. Errors name `path` and the field.
MachineModel machine_model_from_peaks_json(const nlohmann::json& doc, const std::string& env,
                                           const std::string& path, const CpuInfo& cpu,
                                           SimdLevel level);

}  // namespace nnperf
