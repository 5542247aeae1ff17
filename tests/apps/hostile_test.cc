// The hostile probe as tests: each class of bad input a new or adversarial user can give, run
// through the real program with small inputs. Every refusal must be one line on stderr starting
// "nnperf: error:", naming the flag or file, with exit code 1 or 2 (never a signal, never
// "internal error"), must come quickly (no hang, no huge allocation), and must leave earlier
// outputs byte for byte as they were.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/tensor.h"
#include "nnperf/io/csv.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/mlp.h"
#include "nnperf/train/trainer.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::read_text;
using test::run_command;
using test::TempDir;

// nnperf with a hard time limit (a hang fails the test instead of the suite) and extra env.
test::CommandResult nnperf(const std::string& args, const std::string& env = "", int limit_s = 60) {
  return run_command(fmt::format("{} timeout {} '{}' {}", env, limit_s, NNPERF_BINARY, args));
}

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A clean refusal: exit 1 or 2, one line, names `needle`.
void expect_refused(const test::CommandResult& r, const std::string& needle,
                    const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 2) << "exit " << r.exit_code << "\n"
                                                    << r.err << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("nnperf: error: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.err;
}

// Every file under dir with its content.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) m[fs::relative(e.path(), dir).string()] = read_text(e.path());
  }
  return m;
}

const char* kTiny =
    "--synthetic --hidden 16 --batch-size 64 --threads 1 --progress quiet --no-tensorboard "
    "--limit-train 256 --limit-test 128 --val-split 128 --epochs 1";

// --- 2. No hang, no absurd resource use ----------------------------------------------------

TEST(Hostile, ThreadsAboveTheCpuCountAreCappedWithAWarningAndAbsurdCountsRefused) {
  TempDir dir;
  const std::string no_threads =
      std::string(kTiny).replace(std::string(kTiny).find("--threads 1"), 11, "");
  const auto r =
      nnperf(fmt::format("train {} --threads 512 --out-dir '{}'", no_threads, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nnperf: warning: --threads 512: this machine has"), std::string::npos)
      << r.err;
  const auto j = nlohmann::json::parse(read_text(dir / "final_results.json"));
  EXPECT_LE(j["hyperparameters"]["threads"].get<int>(),
            static_cast<int>(std::thread::hardware_concurrency()));
  for (const char* cmd : {"train", "peaks", "devices", "lab"}) {
    expect_refused(nnperf(fmt::format("{} --threads 100000", cmd)), "--threads",
                   std::string(cmd) + " --threads 100000");
  }
}

TEST(Hostile, AnUnknownCommandOrAFlagBeforeTheCommandIsNamed) {
  expect_refused(nnperf("bogus"), "unknown command 'bogus'; expected one of: lab, train",
                 "unknown command");
  expect_refused(nnperf("--threads 3 train"), "--threads: flags go after the command",
                 "flag before the command");
  const auto help = nnperf("help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Subcommands:"), std::string::npos) << help.out;
}

TEST(Hostile, ParserErrorsSayWhatWasExpectedAndNameTheCommandAsTyped) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"train --epochs",
            "--epochs: expected an integer in [1, 1000000] after the flag, got nothing "
            "(see 'nnperf train --help')"},
           {"mlp-bench --batch-sizes",
            "--batch-sizes: expected a comma-separated list after the flag"},
           {"verify conv2d --problem", "--problem: expected a value after the flag"},
           {"train --bogus 3", "unknown flag --bogus for this command"},
           {"train --epochs 1 2 3",
            "unexpected arguments '2' '3' (this command takes no positional arguments)"},
           {"sweep run a b",
            "unexpected argument 'b' (this command takes fewer positional arguments) "
            "(see 'nnperf sweep run --help')"},
           {"sweep run", "the argument dir is required (see 'nnperf sweep run --help')"},
           {"sweep", "expected one of: plan, run, merge, run-cell"},
           // Lists: an empty list or item is not "the default", and an item twice is a typo.
           {"mlp-bench --impls ''", "--impls: expected a comma-separated list, got ''"},
           {"lab --synthetic --progress bar", "--progress bar: the lab's stages print lines"},
           // An unknown name is refused naming the flag that gave it.
           {"train --model nosuch --synthetic", "--model: unknown model 'nosuch': expected one of"},
           {"profile --model nosuch", "--model: unknown model 'nosuch'"},
           {"sweep plan --profile --models resnet18,nosuch --algorithms gemm --out-dir x",
            "--models: unknown model 'nosuch'"},
           {"train --activation Foo --synthetic", "--activation: unknown activation 'Foo'"},
           {"train --optimizer bogus --synthetic", "--optimizer: unknown optimizer 'bogus'"},
           {"train --impl bogus --synthetic", "--impl: unknown GEMM algorithm 'bogus'"},
           {"activations --activations relu,Foo", "--activations: unknown activation 'Foo'"},
           {"bench conv2d --problem mb1ic3ih8oc4kh3 --algorithms nosuch",
            "--algorithms: unknown convolution algorithm 'nosuch'"},
           {"verify conv2d --problem mb1ic3ih8oc4kh3 --algorithm nosuch",
            "--algorithm: unknown convolution algorithm 'nosuch'"},
           // An empty value is not "the default" (an unset shell variable is not a choice).
           {"profile --model resnet18 --sizes ''", "--sizes: expected a value, got ''"},
           {"train --synthetic --out-dir ''", "--out-dir: expected a value, got ''"},
           {"mlp-bench --impls naive,,blas", "got 'naive,,blas' (item 2 is empty)"},
           {"mlp-bench --impls naive,naive", "--impls: 'naive,naive' lists naive twice"},
           // ...also in another spelling of the same name (it ran twice, the second run's record
           // replacing the first's).
           {"mlp-bench --impls blas,BLAS",
            "--impls: 'blas,BLAS' lists blas twice (as blas and BLAS)"},
           {"activations --activations relu,RELU --synthetic",
            "--activations: 'relu,RELU' lists relu twice (as relu and RELU)"},
           {"bench conv2d --problem mb1ic3ih8oc4kh3 --algorithms gemm,GEMM",
            "--algorithms: 'gemm,GEMM' lists gemm twice"},
           {"mlp-bench --batch-sizes 32,64,32", "--batch-sizes: '32,64,32' lists 32 twice"},
           {"activations --activations relu,gelu,relu",
            "--activations: 'relu,gelu,relu' lists relu twice"},
           {"bench gemm --problem m8n8k8 --algorithms ''",
            "--algorithms: expected a comma-separated list"},
           {"complexity --models resnet18,vgg16,resnet18", "lists resnet18 twice"},
           {"complexity --model resnet18 --batch-sizes 1,1", "--batch-sizes: '1,1' lists 1 twice"},
           {"sweep plan --profile --models resnet18 --sizes 32,x --out-dir x",
            "--sizes: expected an integer in [1, 65536], got 'x'"},
           {"sweep plan --profile --models resnet18 --algorithms gemm --sizes 32,40,32 --out-dir x",
            "--sizes 32,40,32: 32 is given twice"},
           {"lab --synthetic --algorithms gemm,gemm", "--algorithms: 'gemm,gemm' lists gemm twice"},
           {"lab --synthetic --algorithms gemm,foo",
            "--algorithms foo: expected guess or find, or one of"},
           {"lab --synthetic --algorithms find,FIND",
            "--algorithms: 'find,FIND' lists find twice (as find and FIND)"},
           {"lab --synthetic --data /tmp", "--data /tmp --synthetic: give one of them"},
           {"mlp-bench --synthetic --data /tmp", "--data /tmp --synthetic: give one of them"},
           {"profile --model resnet18 --sizes 16 --num-sizes 4",
            "--num-sizes: describes the range --min-size..--max-size"},
           {"train --model resnet18 --synthetic --init-weights /dev/null",
            "--init-weights /dev/null: not a regular file"},
           {"profile --model resnet18 --pass train --stage sanity --sizes 64,32 --output-dir x",
            "at input size 32 resnet18's layer4.0.bn1 output is 1x1 per channel, and BatchNorm "
            "cannot train"},
           {"sweep plan --profile --models resnet18 --algorithms gemm --pass train --sizes 64,32 "
            "--out-dir x",
            "--pass train --batch-size 1: at input size 32 resnet18's layer4.0.bn1 output is 1x1"},
           {"sweep plan --train --models resnet18 --batch-sizes 4,1 --input-size 32 --out-dir x",
            "--batch-sizes 1: at input size 32 resnet18's layer4.0.bn1 output is 1x1 per channel"},
           // Nothing measured or checked is a failure, not a success with an empty table.
           {"verify conv2d --problem mb1ic16ih16oc16kh3sh2ph1 --algorithm winograd",
            "no algorithm was checked on this problem: every one was skipped"},
           {"bench conv2d --problem mb1ic16ih16oc16kh3sh2ph1 --algorithms winograd --measure 1",
            "no algorithm ran on this problem: every one was skipped"},
           // Numbers are decimal: strtod alone would read 0x10 as 16.
           {"train --lr 0x10",
            "--lr: expected a number > 0, at most float's largest (3.4e38), got '0x10'"},
           {"train --lr inf",
            "--lr: expected a number > 0, at most float's largest (3.4e38), got 'inf'"},
           {"train --lr 1e300",
            "--lr: expected a number > 0, at most float's largest (3.4e38), got 1e300"},
           {"train --weight-decay 1e39",
            "--weight-decay: expected a number >= 0, at most float's largest (3.4e38), got "
            "1e39"}}) {
    expect_refused(nnperf(args), needle, args);
  }
}

TEST(Hostile, SizesFromFlagsAreRefusedBeforeAllocating) {
  TempDir dir;
  const std::string out = fmt::format("--out-dir '{}'", (dir / "x").string());
  // A 64 MiB budget: none of these may get as far as allocating their sizes.
  const std::string cap = "NNPERF_MEMORY_LIMIT=64M";
  expect_refused(nnperf(fmt::format("train {} --batch-size 99999999999 {}", kTiny, out)),
                 "--batch-size", "batch beyond any sense");
  expect_refused(nnperf(fmt::format("train {} --hidden 100000,100000 {}", kTiny, out), cap),
                 "--hidden", "hidden widths beyond the budget");
  expect_refused(nnperf(fmt::format("train {} --val-split 900000000 {}", kTiny, out), cap),
                 "--val-split", "synthetic validation split beyond the budget");
  expect_refused(
      nnperf(fmt::format("mlp-bench --batch-sizes 32,9000000 --hidden 4096,4096 {}", out), cap),
      "--batch-sizes", "mlp-bench batches beyond the budget");
  expect_refused(nnperf(fmt::format("peaks --sgemm-n 60000 --rounds 1 --out ''"), cap), "--sgemm-n",
                 "sgemm size beyond the budget");
  const auto conv = nnperf("bench conv2d --problem mb1ic4096ih1024oc4096kh1 --threads 1");
  expect_refused(conv, "--problem mb1ic4096ih1024oc4096", "conv problem beyond memory");
  EXPECT_NE(conv.err.find("needs"), std::string::npos) << conv.err;
  EXPECT_NE(conv.err.find("available"), std::string::npos) << conv.err;
  expect_refused(nnperf("verify conv2d --problem mb64ic4096ih4096oc4096kh3ph1", cap), "--problem",
                 "verify beyond memory");
  expect_refused(
      nnperf(fmt::format("profile --model resnet18 --sizes 1:100000000:1 --output-dir '{}'",
                         (dir / "p").string())),
      "--sizes", "a size range of a hundred million sizes");
  expect_refused(
      nnperf(fmt::format("profile --model resnet18 --sizes 8192 --batch-size 64 --stage sanity "
                         "--output-dir '{}' --progress quiet",
                         (dir / "p2").string()),
             "NNPERF_MEMORY_LIMIT=256M"),
      "resnet18 at input 64x3x8192x8192", "a model input beyond the budget");
  EXPECT_FALSE(fs::exists(dir / "x")) << "a refused run left its output folder behind";
}

TEST(Hostile, AnIdxHeaderClaimingBillionsOfLabelsInATinyFileIsRefusedWithoutTouchingMemory) {
  TempDir dir;
  // A valid images file would not matter: the labels file is read and refused on its own.
  std::string labels =
      std::string("\0\0\x08\x01", 4) + std::string("\x80\0\0\0", 4) + std::string(2048, '\1');
  {
    std::FILE* f = std::fopen((dir / "train-labels-idx1-ubyte").c_str(), "wb");
    std::fwrite(labels.data(), 1, labels.size(), f);
    std::fclose(f);
    f = std::fopen((dir / "train-images-idx3-ubyte").c_str(), "wb");
    const std::string img = std::string("\0\0\x08\x03", 4) +
                            std::string("\0\0\0\x02\0\0\0\x1c\0\0\0\x1c", 12) +
                            std::string(2 * 28 * 28, '\7');
    std::fwrite(img.data(), 1, img.size(), f);
    std::fclose(f);
  }
  const auto r = nnperf(fmt::format("train --data '{}' --out-dir '{}' --progress quiet",
                                    dir.path().string(), (dir / "out").string()),
                        "NNPERF_MEMORY_LIMIT=64M");
  expect_refused(r, "train-labels-idx1-ubyte: truncated: header says 2147483648",
                 "IDX header claiming 2^31 labels");
}

// A 2 GB address-space limit for a child nnperf. AddressSanitizer reserves terabytes of shadow
// address space at start-up, so under it no such limit can be set: there the test checks the
// refusal only, and the Release build's run checks that it comes before the allocation.
#if defined(__SANITIZE_ADDRESS__)
const char* const kAddressLimit = "";
#else
const char* const kAddressLimit = "ulimit -v 2000000;";
#endif

TEST(Hostile, AnImageHeaderClaimingAGiantImageIsRefusedBeforeLibpngAllocatesItsRows) {
  TempDir dir;
  // A 57-byte PNG claiming 1,000,000,000 x 1 pixels beside valid 8x8 ones: refused by our size
  // check before libpng sizes its row buffers by the header (3 GB), so a 2 GB address-space
  // limit is no obstacle to the refusal.
  const auto chunk = [](const std::string& type, const std::string& data) {
    std::string out;
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((data.size() >> s) & 0xff));
    const std::string body = type + data;
    const uLong crc =
        crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
    out += body;
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((crc >> s) & 0xff));
    return out;
  };
  const auto png = [&](uint32_t w, uint32_t h, const std::string& idat) {
    std::string ihdr;
    for (uint32_t v : {w, h}) {
      for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<char>((v >> s) & 0xff));
    }
    ihdr += std::string("\x08\x02\x00\x00\x00", 5);
    return "\x89PNG\r\n\x1a\n" + chunk("IHDR", ihdr) + chunk("IDAT", idat) + chunk("IEND", "");
  };
  std::string rows;
  for (int y = 0; y < 8; ++y) rows += std::string(1, '\0') + std::string(24, '\x80');
  std::string packed(compressBound(static_cast<uLong>(rows.size())), '\0');
  uLongf n = static_cast<uLongf>(packed.size());
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(packed.data()), &n,
                     reinterpret_cast<const Bytef*>(rows.data()), static_cast<uLong>(rows.size())),
            Z_OK);
  packed.resize(n);
  const auto write = [&](const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::FILE* f = std::fopen(p.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  };
  for (const char* p : {"train/cat/a.png", "test/cat/a.png", "test/dog/a.png"})
    write(dir / "imf" / p, png(8, 8, packed));
  write(dir / "imf/train/dog/giant.png", png(1000000000, 1, ""));
  const auto r = nnperf(
      fmt::format("train --model resnet18 --epochs 1 --batch-size 2 --input-size 32 --threads 1 "
                  "--progress quiet --data '{}' --out-dir '{}'",
                  (dir / "imf").string(), (dir / "out").string()),
      kAddressLimit);
  expect_refused(r, "giant.png: PNG header claims 1000000000x1 pixels, over the limit",
                 "a giant PNG header");
}

// --- 3. Nothing lost or mixed ----------------------------------------------------------------

TEST(Hostile, TrainNeverWritesIntoAnotherRunsFolderAndOverwriteReplacesItWhole) {
  TempDir dir;
  const fs::path out = dir / "run";
  ASSERT_EQ(nnperf(fmt::format("train {} --out-dir '{}'", kTiny, out.string())).exit_code, 0);
  const auto before = snapshot(out);
  expect_refused(nnperf(fmt::format("train {} --epochs 2 --out-dir '{}'", kTiny, out.string())),
                 out.string(), "second train into the same folder");
  EXPECT_EQ(snapshot(out), before) << "the refused run changed the first run's files";

  // A folder of someone else's files is never deleted, even with --overwrite.
  fs::create_directories(dir / "mine");
  {
    std::FILE* f = std::fopen((dir / "mine" / "thesis.tex").c_str(), "wb");
    std::fclose(f);
  }
  expect_refused(
      nnperf(fmt::format("train {} --out-dir '{}' --overwrite", kTiny, (dir / "mine").string())),
      "did not write", "--overwrite on a foreign folder");
  EXPECT_TRUE(fs::exists(dir / "mine" / "thesis.tex"));

  const auto r = nnperf(fmt::format(
      "train {} --epochs 2 --warmup-epochs 1 --out-dir '{}' --overwrite", kTiny, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable m = read_csv(out / "training_metrics.csv");
  EXPECT_EQ(m.rows.size(), 2u) << "--overwrite must replace the folder whole, not append";
}

// Every entry directly in dir, hidden ones included.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Hostile, AFailedOverwriteKeepsTheEarlierOutputs) {
  TempDir dir;
  const fs::path out = dir / "run";
  ASSERT_EQ(nnperf(fmt::format("train {} --out-dir '{}'", kTiny, out.string())).exit_code, 0);
  const auto before = snapshot(out);
  // Refused before the folder is claimed: nothing moves.
  expect_refused(nnperf(fmt::format("mlp-bench --impls blas --batch-sizes 8 --synthetic "
                                    "--activation foo --out-dir '{}' --overwrite",
                                    out.string())),
                 "unknown activation 'foo'", "an early refusal");
  EXPECT_EQ(snapshot(out), before);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"run"});
  // Fails after the folder was claimed and written to (training diverges at step 2): the old
  // outputs go back in place, the line says so, and the new run's are kept beside them. (The
  // folder is given as "run/", as shell completion writes it.)
  const auto r = nnperf(fmt::format("train {} --epochs 3 --lr 1e30 --out-dir '{}/' --overwrite",
                                    kTiny, out.string()));
  expect_refused(r, "the earlier outputs in " + out.string() + " were kept", "a late failure");
  EXPECT_NE(r.err.find("this run's outputs are in " + out.string() + "_incomplete"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(snapshot(out), before) << "a failed --overwrite run changed the earlier outputs";
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"run", "run_incomplete"}));
  EXPECT_TRUE(fs::exists(dir / "run_incomplete" / "training_metrics.csv"));
  // A successful one replaces them and leaves nothing aside.
  fs::remove_all(dir / "run_incomplete");
  ASSERT_EQ(nnperf(fmt::format("train {} --epochs 2 --warmup-epochs 1 --out-dir '{}' --overwrite",
                               kTiny, out.string()))
                .exit_code,
            0);
  EXPECT_NE(snapshot(out), before);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"run"});
}

TEST(Hostile, AnOverwriteRunKilledOutrightIsFoundByTheNextClaim) {
  TempDir dir;
  const fs::path out = dir / "run";
  ASSERT_EQ(nnperf(fmt::format("train {} --out-dir '{}'", kTiny, out.string())).exit_code, 0);
  const auto before = snapshot(out);
  // SIGKILL an --overwrite run once it has moved the old outputs aside: nothing can settle them.
  const fs::path aside = dir / ".run.replaced";
  const std::string tiny_long =
      std::string(kTiny).replace(std::string(kTiny).find("--epochs 1"), 10, "--epochs 1000");
  const auto k = run_command(fmt::format(
      "( '{}' train {} --out-dir '{}' --overwrite >/dev/null 2>&1 & echo $! > '{}/pid' ); "
      "for i in $(seq 1 600); do [ -d '{}' ] && break; sleep 0.05; done; sleep 0.2; kill -9 $(cat "
      "'{}/pid')",
      NNPERF_BINARY, tiny_long, out.string(), dir.path().string(), aside.string(),
      dir.path().string()));
  ASSERT_EQ(k.exit_code, 0) << k.err;
  ASSERT_TRUE(fs::exists(aside)) << "the --overwrite run did not move the old outputs aside";
  EXPECT_EQ(snapshot(aside), before);
  // Every later claim of the folder is refused, naming the hidden folder and the way back.
  for (const std::string flags : {"--overwrite", ""}) {
    fs::remove_all(out);
    expect_refused(
        nnperf(fmt::format("train {} --out-dir '{}' {}", kTiny, out.string(), flags)),
        fmt::format("{} holds the outputs an earlier --overwrite run moved aside", aside.string()),
        "claim after a killed --overwrite " + flags);
    EXPECT_FALSE(fs::exists(out));
  }
  EXPECT_EQ(snapshot(aside), before);
  fs::rename(aside, out);
  EXPECT_EQ(
      nnperf(fmt::format("train {} --out-dir '{}' --overwrite", kTiny, out.string())).exit_code, 0);
}

TEST(Hostile, OutputFilesNeverReplaceInputsDevicesOrLinks) {
  TempDir dir;
  const fs::path prof = dir / "prof";
  ASSERT_EQ(
      nnperf(fmt::format(
                 "profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 --threads 1 "
                 "--progress quiet --output-dir '{}'",
                 prof.string()))
          .exit_code,
      0);
  const auto before = snapshot(prof);
  const std::string roof =
      fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 10", prof.string());
  const std::string out = fmt::format("--out-dir '{}'", (dir / "r").string());
  // An input of the same command, a device, a pipe: refused before anything is written.
  expect_refused(nnperf(fmt::format("{} {} --json '{}'", roof, out, (prof / "run.json").string())),
                 "is in a folder this command reads", "--json over an input");
  expect_refused(nnperf(fmt::format("{} {} --summary '{}'", roof, out,
                                    (prof / "resnet18_gemm_overall.csv").string())),
                 "is in a folder this command reads", "--summary over an input");
  expect_refused(nnperf(fmt::format("{} {} --json /dev/stdout", roof, out)), "is in /dev or /proc",
                 "/dev/stdout");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_refused(
      nnperf(fmt::format("complexity --model resnet18 --json '{}'", (dir / "fifo").string())),
      "is a pipe; expected a regular file", "a fifo");
  expect_refused(nnperf(fmt::format("peaks --quick --out /dev/full")),
                 "--out /dev/full: is a character device", "peaks --out a device");
  // A folder given twice would count its points twice.
  expect_refused(nnperf(fmt::format("{} '{}/' {}", roof, prof.string(), out)), "given twice",
                 "a folder twice");
  // One file for two outputs would keep only the last one written.
  const fs::path same = dir / "same.out";
  expect_refused(nnperf(fmt::format("{} {} --json '{}' --summary '{}/./same.out'", roof, out,
                                    same.string(), dir.path().string())),
                 "--summary " + dir.path().string() + "/./same.out and --json",
                 "roofline --json = --summary");
  expect_refused(nnperf(fmt::format("complexity --model resnet18 --json '{0}' --csv '{0}' "
                                    "--summary-json '{0}'",
                                    same.string())),
                 fmt::format("--json {0} and --csv {0}: one file for two outputs", same.string()),
                 "complexity's three outputs in one file");
  EXPECT_FALSE(fs::exists(same));
  EXPECT_EQ(snapshot(prof), before);
  EXPECT_FALSE(fs::exists(dir / "r"));
  // peaks merges only into a peaks.json.
  std::ofstream(dir / "foreign.json") << R"({"context": {}, "records": []})";
  expect_refused(nnperf(fmt::format("peaks --quick --out '{}'", (dir / "foreign.json").string())),
                 "'context' is not an environment of ceilings", "peaks into another JSON");
  EXPECT_EQ(read_text(dir / "foreign.json"), R"({"context": {}, "records": []})");
  // A symbolic link is written through (the link stays), also to a file not written yet.
  fs::create_symlink(dir / "target.json", dir / "link.json");
  const auto r = nnperf(fmt::format("{} {} --json '{}'", roof, out, (dir / "link.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_NE(read_text(dir / "target.json").find("\"records\""), std::string::npos);
}

// An output folder that cannot be made is named after the flag that gave it, alike in every
// command (some said only the path).
TEST(Hostile, AnOutputFolderThatCannotBeMadeIsNamedByItsFlag) {
  TempDir dir;
  std::ofstream(dir / "file") << "x";
  const std::string bad = (dir / "file" / "sub").string();
  // Results for the roofline and the report to read.
  ASSERT_EQ(nnperf("mlp-bench --synthetic --impls naive --batch-sizes 8 --warmup 0 --measure 1 "
                   "--consistency-steps 2 --overhead-reps 1 --threads 1 --out-dir '" +
                   (dir / "b").string() + "'")
                .exit_code,
            0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train " + std::string(kTiny) + " --out-dir '" + bad + "'", "--out-dir " + bad},
      {"mlp-bench --synthetic --out-dir '" + bad + "'", "--out-dir " + bad},
      {"profile --model resnet18 --stage sanity --sizes 32 --output-dir '" + bad + "'",
       "--output-dir " + bad},
      {"roofline '" + dir.path().string() + "' --peak-compute 1 --peak-bw 1 --out-dir '" + bad +
           "'",
       "--out-dir " + bad},
      {"report '" + dir.path().string() + "' --out-dir '" + bad + "'", "--out-dir " + bad},
      {"train --model resnet18 --synthetic --iters 1 --batch-size 2 --input-size 32 --log-dir '" +
           bad + "'",
       "--log-dir " + bad},
      {"peaks --quick --out '" + bad + "/p.json'", "--out's folder " + bad}};
  for (const auto& [args, needle] : cases) expect_refused(nnperf(args), needle, args);
}

TEST(Hostile, TrainAndProfileRefuseEachOthersFolders) {
  TempDir dir;
  const fs::path t = dir / "train", p = dir / "profile";
  ASSERT_EQ(nnperf(fmt::format("train {} --out-dir '{}'", kTiny, t.string())).exit_code, 0);
  ASSERT_EQ(
      nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 "
                         "--threads 1 --progress quiet --no-layers --output-dir '{}'",
                         p.string()))
          .exit_code,
      0);
  const auto tb = snapshot(t), pb = snapshot(p);
  expect_refused(
      nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 "
                         "--threads 1 --progress quiet --output-dir '{}'",
                         t.string())),
      "a training run", "profile into a training folder");
  expect_refused(
      nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 "
                         "--threads 1 --progress quiet --resume --output-dir '{}'",
                         t.string())),
      "not a profile sweep", "profile --resume into a training folder");
  expect_refused(nnperf(fmt::format("train {} --out-dir '{}'", kTiny, p.string())), "profile sweep",
                 "train into a profile folder");
  EXPECT_EQ(snapshot(t), tb);
  EXPECT_EQ(snapshot(p), pb);
}

TEST(Hostile, DefaultFolderNamesAreUniqueForRunsStartedInTheSameSecond) {
  TempDir dir;
  const auto r =
      run_command(fmt::format("cd '{}' && for i in 1 2 3; do timeout 60 '{}' train {} > /dev/null "
                              "2>&1 & done; wait; ls runs",
                              dir.path().string(), NNPERF_BINARY, kTiny));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines(r.out), 3) << r.out;
  for (const auto& e : fs::directory_iterator(dir / "runs")) {
    EXPECT_TRUE(fs::exists(e.path() / "final_results.json")) << e.path();
  }
}

// A two-size resnet18 sweep with gemm, without the layer passes (about a second).
std::string small_sweep(const fs::path& dir) {
  return fmt::format(
      "profile --model resnet18 --algorithm gemm --stage sanity --sizes 32,40 --threads 1 "
      "--progress quiet "
      "--no-layers --output-dir '{}'",
      dir.string());
}

TEST(Hostile, ProfileResumeRefusesAnotherSetupListingTheDifferences) {
  TempDir dir;
  const std::string base = small_sweep(dir.path());
  ASSERT_EQ(nnperf(base).exit_code, 0);
  const auto before = snapshot(dir.path());
  const auto r = nnperf(base + " --resume --batch-size 2 --fold-bn");
  expect_refused(r, "batch_size: 1 stored, 2 now", "resume with another batch size");
  EXPECT_NE(r.err.find("fold_bn: false stored, true now"), std::string::npos) << r.err;
  EXPECT_EQ(snapshot(dir.path()), before);
  const auto again = nnperf(base + " --resume");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("0 sizes profiled, 2 already done"), std::string::npos) << again.out;
}

TEST(Hostile, AResumedSweepDropsARowCutByAKillAndSaysSo) {
  TempDir dir;
  const std::string base = small_sweep(dir.path());
  ASSERT_EQ(nnperf(base).exit_code, 0);
  const fs::path overall = dir / "resnet18_gemm_overall.csv";
  std::string text = read_text(overall);
  // Cut the last row inside its last field, as a kill between write and newline would.
  text.resize(text.size() - 3);
  {
    std::FILE* f = std::fopen(overall.c_str(), "wb");
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  const auto r = nnperf(base + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nnperf: warning: "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("1 sizes profiled, 1 already done"), std::string::npos) << r.out;
  const CsvTable t = read_csv(overall);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][t.require("input_size")], "32");
  EXPECT_EQ(t.rows[1][t.require("input_size")], "40");
}

// Rewrites `file` with `edit` applied to its rows (header first).
void edit_csv(const fs::path& file,
              const std::function<void(std::vector<std::vector<std::string>>&)>& edit) {
  const CsvTable t = read_csv(file);
  std::vector<std::vector<std::string>> rows{t.header};
  rows.insert(rows.end(), t.rows.begin(), t.rows.end());
  edit(rows);
  std::string text;
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) text += (i ? "," : "") + csv_field(row[i]);
    text += "\n";
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
}

// --resume keeps a size only when its rows are whole: a layer time that is not a number or a lost
// layer row has the size measured again (said on stderr), never appended to; an input size that
// is not an integer is refused with both files untouched.
TEST(Hostile, AResumedSweepMeasuresAgainASizeWhoseRowsAreDamaged) {
  TempDir dir;
  const std::string base = fmt::format(
      "profile --model resnet18 --algorithm gemm --stage sanity --sizes 32,40 --threads 1 "
      "--progress quiet --output-dir '{}'",
      dir.path().string());
  ASSERT_EQ(nnperf(base).exit_code, 0);
  const fs::path overall = dir / "resnet18_gemm_overall.csv",
                 layers = dir / "resnet18_gemm_layers.csv";
  const CsvTable before = read_csv(layers);
  const std::size_t ms = before.require("mean_ms"), size = before.require("input_size");
  edit_csv(layers, [&](auto& rows) {
    rows[3][ms] = "abc";         // a layer of size 32
    rows.erase(rows.end() - 4);  // a layer of size 40
  });
  const auto r = nnperf(base + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("size 32 is measured again: " + layers.string() +
                       ":4: column 'mean_ms': expected a number, got 'abc'"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("size 40 is measured again: " + layers.string() + " holds " +
                       std::to_string(before.rows.size() / 2 - 1) + " of its " +
                       std::to_string(before.rows.size() / 2) + " layer rows"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("2 sizes profiled, 0 already done"), std::string::npos) << r.out;
  const CsvTable after = read_csv(layers);
  ASSERT_EQ(after.rows.size(), before.rows.size());
  for (std::size_t row = 0; row < after.rows.size(); ++row)
    EXPECT_GT(after.number(row, ms), 0.0) << row;
  EXPECT_EQ(read_csv(overall).rows.size(), 2u);
  // Whole again: nothing to measure, nothing rewritten.
  const auto again = nnperf(base + " --resume");
  EXPECT_NE(again.out.find("0 sizes profiled, 2 already done"), std::string::npos) << again.out;
  EXPECT_EQ(read_csv(layers).rows, after.rows);
  edit_csv(layers, [&](auto& rows) { rows[1][size] = "3x2"; });
  // With the overall file's last row cut as well: the refusal comes before any repair.
  const std::string overall_text = read_text(overall);
  std::ofstream(overall, std::ios::binary | std::ios::trunc)
      << overall_text.substr(0, overall_text.size() - 3);
  const auto snap = snapshot(dir.path());
  expect_refused(nnperf(base + " --resume"), layers.string() + ":2: column 'input_size'",
                 "input size 3x2");
  EXPECT_EQ(snapshot(dir.path()), snap);
}

TEST(Hostile, ACutLayersRowIsNotedInTheRooflineAndTheReportAndAbsurdTimesRefused) {
  TempDir dir;
  ASSERT_EQ(
      nnperf(fmt::format(
                 "profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 --threads 1 "
                 "--progress quiet --output-dir '{}'",
                 dir.path().string()))
          .exit_code,
      0);
  const fs::path layers = dir / "resnet18_gemm_layers.csv";
  const std::string full = read_text(layers);
  {
    std::FILE* f = std::fopen(layers.c_str(), "wb");
    std::fwrite(full.data(), 1, full.size() / 2, f);
    std::fclose(f);
  }
  const std::string roof =
      fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 10 --out-dir '{}/r'",
                  dir.path().string(), dir.path().string());
  auto r = nnperf(roof);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(read_text(dir / "r" / "roofline.json"));
  ASSERT_GE(doc["context"]["notes"].size(), 1u);
  EXPECT_NE(doc["context"]["notes"][0].get<std::string>().find("its last row was cut"),
            std::string::npos);
  r = nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_text(dir / "report.md").find("resnet18\\_gemm\\_layers.csv was cut"),
            std::string::npos);
  // A layer time no layer can have: a corrupt row, refused with its line.
  {
    std::FILE* f = std::fopen(layers.c_str(), "wb");
    std::fwrite(full.data(), 1, full.size(), f);
    std::fclose(f);
  }
  const CsvTable t = read_csv(layers);
  const std::size_t ms = t.require("mean_ms");
  for (const char* bad : {"1e-300", "1e300"}) {
    std::string text;
    for (std::size_t i = 0; i < t.header.size(); ++i) text += (i ? "," : "") + t.header[i];
    text += "\n";
    for (std::size_t row = 0; row < t.rows.size(); ++row) {
      for (std::size_t i = 0; i < t.rows[row].size(); ++i) {
        text +=
            (i ? "," : "") + (row == 0 && i == ms ? std::string(bad) : csv_field(t.rows[row][i]));
      }
      text += "\n";
    }
    {
      std::FILE* f = std::fopen(layers.c_str(), "wb");
      std::fwrite(text.data(), 1, text.size(), f);
      std::fclose(f);
    }
    expect_refused(
        nnperf(fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 10 --out-dir '{}/r2'",
                           dir.path().string(), dir.path().string())),
        "resnet18_gemm_layers.csv:2: mean_ms " + std::string(bad[2] == '3' ? "1e+300" : bad) +
            " of layer conv1 is not a plausible layer time",
        std::string("mean_ms ") + bad);
  }
}

TEST(Hostile, TheReportListsRunsThatDidNotFinish) {
  TempDir dir;
  // A training run stopped before its final results, and a profile sweep with one size of two.
  ASSERT_EQ(nnperf(fmt::format("train {} --epochs 2 --out-dir '{}'", kTiny, (dir / "t").string()))
                .exit_code,
            0);
  fs::remove(dir / "t" / "final_results.json");
  ASSERT_EQ(nnperf(small_sweep(dir / "p")).exit_code, 0);
  const fs::path overall = dir / "p" / "resnet18_gemm_overall.csv";
  const std::string text = read_text(overall);
  const std::size_t second = text.find('\n', text.find('\n') + 1) + 1;  // header and the first row
  {
    std::FILE* f = std::fopen(overall.c_str(), "wb");
    std::fwrite(text.data(), 1, second, f);
    std::fclose(f);
  }
  const auto r = nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;  // was: "no nnperf results found"
  const std::string md = read_text(dir / "report.md");
  EXPECT_NE(md.find("2 runs did not finish"), std::string::npos) << md;
  EXPECT_NE(
      md.find(
          "- t: a training run without final\\_results.json (2 epochs in training\\_metrics.csv)"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("- p: the profile sweep of resnet18 with gemm has 1 of its 2 sizes"),
            std::string::npos)
      << md;
}

TEST(Hostile, TheReportRefusesSavedResultsNoRunCouldHaveWritten) {
  TempDir dir;
  const auto bench = [](const std::string& median) {
    return R"({"context": {"model": "mlp"}, "records": [{"impl": "naive", "batch_size": 32, "step": "train", )"
           R"("time_ms_median": )" +
           median + R"(, "time_ms_min": 1, "time_ms_max": 2}]})";
  };
  fs::create_directories(dir / "b");
  for (const auto& [content, needle] : std::vector<std::pair<std::string, std::string>>{
           {bench("-1"), "records[0].time_ms_median': expected a positive time in ms, found -1"},
           {bench("\"fast\""), "records[0].time_ms_median"},
           {R"({"context": {}})", "expected a non-empty array 'records'"}}) {
    std::ofstream(dir / "b" / "mlp_bench.json", std::ios::trunc) << content;
    expect_refused(nnperf(fmt::format("report '{}'", dir.path().string())), needle, content);
  }
  fs::remove_all(dir / "b");
  fs::create_directories(dir / "t");
  std::ofstream(dir / "t" / "final_results.json")
      << R"({"final_test_acc": 7, "hyperparameters": {}})";
  expect_refused(nnperf(fmt::format("report '{}'", dir.path().string())),
                 "final_test_acc': expected a fraction in [0, 1], found 7", "accuracy 7");
  EXPECT_FALSE(fs::exists(dir / "report.md"));
  // A file without what identifies the run and its result is no run's (it was a blank row).
  for (const auto& [content, needle] : std::vector<std::pair<std::string, std::string>>{
           {"{}", "field 'activation' is missing"},
           {R"({"activation": "ReLU", "final_test_acc": 0.5})",
            "field 'final_test_loss' is missing"},
           {R"({"model": "resnet18"})", "field 'final_test_acc' is missing"},
           {R"({"model": "resnet18", "final_test_acc": 0.5})", "field 'context' is missing"},
           {R"({"model": "resnet18", "final_test_acc": 0.5, "context": [1]})",
            "field 'context'"}}) {
    std::ofstream(dir / "t" / "final_results.json", std::ios::trunc) << content;
    expect_refused(nnperf(fmt::format("report '{}'", dir.path().string())), needle, content);
  }
  fs::remove_all(dir / "t");
  // A layer time no profile measures is refused by the report as by the roofline.
  const fs::path prof = dir / "p";
  ASSERT_EQ(
      nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 "
                         "--threads 1 --progress quiet --output-dir '{}'",
                         prof.string()))
          .exit_code,
      0);
  const fs::path layers = prof / "resnet18_gemm_layers.csv";
  CsvTable t = read_csv(layers);
  t.rows[0][t.require("mean_ms")] = "-1";
  {
    CsvWriter w(layers, t.header);
    for (const auto& row : t.rows) w.row(row);
  }
  expect_refused(nnperf(fmt::format("report '{}'", dir.path().string())),
                 "resnet18_gemm_layers.csv:2: mean_ms -1 of layer", "a negative layer time");
  EXPECT_FALSE(fs::exists(dir / "report.md"));
  // An input size or batch no sweep can have, in either CSV.
  t.rows[0][t.require("mean_ms")] = "1";
  {
    CsvWriter w(layers, t.header);
    for (const auto& row : t.rows) w.row(row);
  }
  for (const auto& [file, column, value] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"resnet18_gemm_layers.csv", "input_size", "99999999999"},
           {"resnet18_gemm_overall.csv", "input_size", "0"},
           {"resnet18_gemm_overall.csv", "batch_size", "99999999999"}}) {
    const std::string good = read_text(prof / file);
    CsvTable bad = read_csv(prof / file);
    bad.rows[0][bad.require(column)] = value;
    {
      CsvWriter w(prof / file, bad.header);
      for (const auto& row : bad.rows) w.row(row);
    }
    expect_refused(nnperf(fmt::format("report '{}'", dir.path().string())),
                   file + ":2: " + column + " " + value + " is not one a sweep can have",
                   file + " " + value);
    EXPECT_FALSE(fs::exists(dir / "report.md"));
    std::ofstream(prof / file, std::ios::binary | std::ios::trunc) << good;
  }
  EXPECT_EQ(nnperf(fmt::format("report '{}'", dir.path().string())).exit_code, 0);
}

// --- 4. No made-up numbers -------------------------------------------------------------------

TEST(Hostile, NonsenseNumbersAreRefusedNamingTheFlag) {
  TempDir dir;
  const std::string out = fmt::format("--out-dir '{}'", (dir / "x").string());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"train --lr nan", "--lr"},
      {"train --lr inf", "--lr"},
      {"train --lr -0.1", "--lr"},
      {"train --lr abc", "--lr"},
      {"train --momentum nan", "--momentum"},
      {"train --weight-decay inf", "--weight-decay"},
      {"train --label-smoothing 1", "--label-smoothing"},
      {"train --label-smoothing -0.1", "--label-smoothing"},
      {"train --limit-train -5", "--limit-train"},
      {"train --limit-test -5", "--limit-test"},
      {"train --threads -5", "--threads"},
      {"train --val-split -1", "--val-split"},
      {"train --epochs 0", "--epochs"},
      {"train --epochs 1e3", "--epochs"},
      {"train --batch-size 0", "--batch-size"},
      {"train --hidden 32,-1", "--hidden"},
      {"train --seed -3", "--seed"},
      {"activations --warmup-epochs -5", "--warmup-epochs"},
      {"mlp-bench --max-seconds -1", "--max-seconds"},
      {"mlp-bench --consistency-steps -5", "--consistency-steps"},
      {"mlp-bench --consistency-tolerance nan", "--consistency-tolerance"},
      {"mlp-bench --batch-sizes 0,32", "--batch-sizes"},
      {"mlp-bench --device gpu", "--device"},
      {"train --device gpu", "--device"},
      {"train --impl cublas", "--impl"},
      {"train --device cuda --impl blocked", "--impl"},
      {"mlp-bench --impls cublas", "--impls"},
      {"mlp-bench --impls blas,nope --device cuda", "--impls"},
      {"peaks --rounds 0", "--rounds"},
      {"peaks --sgemm-n -1", "--sgemm-n"},
      {"peaks --steps-per-octave 0", "--steps-per-octave"},
      {"profile --warmup -5", "--warmup"},
      {"profile --measure 0", "--measure"},
      {"profile --num-sizes 0", "--num-sizes"},
      {"profile --sizes 32,abc", "--sizes"},
      {"profile --test --quick", "--quick"},
      {"bench conv2d --problem mb1ic8ih8oc8kh3 --measure 0", "--measure"},
      {"bench conv2d --problem mb1ic8ih8oc8kh3 --peak-gflops nan", "--peak-gflops"},
      {"verify conv2d --problem mb1ic8ih8oc8kh3 --threads -1", "--threads"},
  };
  for (const auto& [args, flag] : cases) {
    const auto r =
        nnperf(args + (args.rfind("train", 0) == 0 ? " --synthetic " + out : std::string()));
    expect_refused(r, flag, args);
    EXPECT_EQ(r.exit_code, 2) << args;
  }
  EXPECT_FALSE(fs::exists(dir / "x"));
}

TEST(Hostile, NoValidationSplitWritesEmptyCellsNotZeros) {
  TempDir dir;
  const auto r =
      nnperf(fmt::format("train {} --val-split 0 --out-dir '{}'", kTiny, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable m = read_csv(dir / "training_metrics.csv");
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.rows[0][m.require("val_loss")], "");
  EXPECT_EQ(m.rows[0][m.require("val_acc")], "");
  const auto j = nlohmann::json::parse(read_text(dir / "final_results.json"));
  EXPECT_TRUE(j["final_val_acc"].is_null());
  EXPECT_TRUE(j["final_val_loss"].is_null());
}

TEST(Hostile, RecordsKeepTheNumbersTheUserTypedAndMeasuredSecExcludesWarmup) {
  TempDir dir;
  const auto r =
      nnperf(fmt::format("train {} --lr 0.001 --epochs 3 --warmup-epochs 2 --out-dir '{}'", kTiny,
                         dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_text(dir / "final_results.json");
  EXPECT_NE(text.find("\"learning_rate\": 0.001,"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["hyperparameters"]["epochs"], 1);  // the timed epochs, as usra-survey's README shows
  EXPECT_EQ(j["hyperparameters"]["total_epochs"], 3);
  EXPECT_EQ(j["measured_epochs"], 1);
  // MEASURED_SEC x IMGS_PER_SEC = the images of the one measured epoch (256), not of all three.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.out, m, std::regex(R"(MEASURED_SEC=([0-9.]+) IMGS_PER_SEC=([0-9.]+))")));
  EXPECT_NEAR(std::stod(m[1]) * std::stod(m[2]), 256.0, 2.0) << r.out;
}

// The learning rate is blamed only when it can be the cause.
TEST(Hostile, DivergenceBlamesTheLearningRateOnlyWhenItIsTheCause) {
  const auto& act = find_activation("ReLU");
  Graph g = build_mlp(4, {8}, 3, act, /*flatten=*/false);
  Rng rng(1);
  g.init(rng);
  OptimizerOptions oo;
  oo.name = "sgd";
  oo.lr = 0.1;
  PlanContext ctx{&find_gemm("naive"), 1, true};
  Trainer t(g, make_optimizer(oo), ctx);
  Tensor x(Shape{2, 4});
  x.fill(1.0f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  const std::vector<int32_t> labels{0, 1};
  try {
    t.step(x, labels);
    FAIL() << "a NaN input must stop training";
  } catch (const DivergenceError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find("try a lower --lr"), std::string::npos) << m;
    EXPECT_NE(m.find("input batch"), std::string::npos) << m;
  }
  // Updates with finite data that blow up: now the learning rate is the likely cause.
  TempDir dir;
  const auto r = nnperf(fmt::format("train {} --optimizer sgd --lr 1e12 --epochs 2 --out-dir '{}'",
                                    kTiny, dir.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--lr"), std::string::npos) << r.err;
}

// --- 5. Ctrl-C ---------------------------------------------------------------------------------

// Starts `args` in the background, sends SIGINT (twice when `twice`) after `after_s` seconds and
// prints "<exit code> <seconds from the first signal to exit>".
test::CommandResult interrupted(const std::string& args, double after_s, bool twice,
                                const char* sig = "INT") {
  return run_command(
      fmt::format("'{}' {} >/dev/null 2>&1 & pid=$!; sleep {}; t0=$(date +%s.%N); kill -{} $pid; "
                  "{} wait $pid; rc=$?; "
                  "t1=$(date +%s.%N); echo \"$rc $(awk \"BEGIN {{ print $t1 - $t0 }}\")\"",
                  NNPERF_BINARY, args, after_s, sig,
                  twice ? fmt::format("sleep 0.05; kill -{} $pid 2>/dev/null;", sig) : ""));
}

TEST(Hostile, CtrlCStopsWithinASecondAlsoDuringFindPlanning) {
  TempDir dir;
  // find on VGG16 at 224 spends many seconds timing candidates: the signal lands during planning.
  const auto r = interrupted(
      fmt::format("profile --model vgg16 --algorithm find --find-exhaustive --stage sanity "
                  "--sizes 224 --threads 1 --progress quiet --output-dir '{}'",
                  (dir / "p").string()),
      1.5, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int rc = -1;
  double secs = 99;
  ASSERT_EQ(std::sscanf(r.out.c_str(), "%d %lf", &rc, &secs), 2) << r.out;
  EXPECT_EQ(rc, 130);
  // Ctrl-C is honoured between kernel calls (graph nodes, find candidates, timed runs) and
  // inside the FFT algorithms' weight packing (measured before it was: 1.55 s to stop when the
  // signal came while VGG-16's 64x64 filters were packed), not inside other calls: on the portable
  // scalar path (the whole binary's rerun with NNPERF_SIMD=scalar) a single convolution call of
  // VGG16 at 224 can itself take most of a second on a loaded 2-core machine. The same under
  // AddressSanitizer, whose kernels run 2-3x slower.
#if defined(__SANITIZE_ADDRESS__)
  const bool slow_kernels = true;
#else
  const char* simd = std::getenv("NNPERF_SIMD");
  const bool slow_kernels = simd != nullptr && std::string(simd) == "scalar";
#endif
  const double limit = slow_kernels ? 3.0 : 1.0;
  EXPECT_LT(secs, limit) << "took " << secs << " s to stop";
  // A second Ctrl-C exits at once.
  const auto r2 = interrupted(
      fmt::format("profile --model vgg16 --algorithm find --find-exhaustive --stage sanity "
                  "--sizes 224 --threads 1 --progress quiet --output-dir '{}'",
                  (dir / "p2").string()),
      1.5, true);
  ASSERT_EQ(std::sscanf(r2.out.c_str(), "%d %lf", &rc, &secs), 2) << r2.out;
  EXPECT_EQ(rc, 130);
  EXPECT_LT(secs, 0.5);
  // SIGTERM (a batch system's stop) is handled the same way and exits 128 + 15.
  const auto r3 = interrupted(
      fmt::format("profile --model vgg16 --algorithm find --find-exhaustive --stage sanity "
                  "--sizes 224 --threads 1 --progress quiet --output-dir '{}'",
                  (dir / "p3").string()),
      1.5, false, "TERM");
  ASSERT_EQ(std::sscanf(r3.out.c_str(), "%d %lf", &rc, &secs), 2) << r3.out;
  EXPECT_EQ(rc, 143);
  EXPECT_LT(secs, limit);
}

// --- 7. Labels say what ran ----------------------------------------------------------------------

TEST(Hostile, AProfileOfAnAlgorithmMostLayersCannotRunSaysWhatRanInstead) {
  TempDir dir;
  const auto r = nnperf(
      fmt::format("profile --model resnet18 --algorithm winograd --test --sizes 32 --threads 1 "
                  "--progress quiet --no-layers --output-dir '{}'",
                  dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: winograd requested, but"), std::string::npos) << r.out;
  const CsvTable t = read_csv(dir / "resnet18_winograd_overall.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  const int64_t conv = t.integer(0, t.require("conv_layers"));
  const int64_t other = t.integer(0, t.require("conv_layers_other_algorithm"));
  EXPECT_EQ(conv, 20);
  EXPECT_GT(other, 0);
  EXPECT_LT(other, conv);
  EXPECT_NE(t.rows[0][t.require("algorithms_used")].find("winograd:"), std::string::npos);
}

}  // namespace
}  // namespace nnperf
