// Checkpoints: an MLP trained a few steps with Adam and with SGD-momentum, captured, written,
// read and restored into a freshly built graph and optimizer, takes a next step bit-identical to
// the original's (what --resume relies on); every corruption (a flipped byte in each region, a
// truncation at every 16th, wrong magic/version/dtype, duplicate names) and every mismatch
// (other model, other shape, missing or extra tensor) is refused naming the file; resnet18's
// BatchNorm running statistics travel with the parameters.
#include "nnperf/train/checkpoint.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/models/mlp.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/train/trainer.h"
#include "test_util.h"

namespace nnperf {
namespace {

constexpr int64_t kFeatures = 12, kClasses = 4, kMb = 8;

struct TrainRun {
  Graph graph;
  Trainer trainer;
  explicit TrainRun(const std::string& optimizer, uint64_t init_seed)
      : graph(build_mlp(kFeatures, {16, 8}, kClasses, find_activation("ReLU"), false)),
        trainer(graph, make_optimizer(options(optimizer)), PlanContext{}) {
    graph.plan(Shape{kMb, kFeatures}, PlanContext{});
    Rng rng(init_seed);
    graph.init(rng);
  }
  static OptimizerOptions options(const std::string& name) {
    OptimizerOptions o;
    o.name = name;
    o.lr = name == "sgd" ? 0.05 : 0.01;
    o.momentum = 0.9;
    o.weight_decay = 1e-4;
    return o;
  }
  void step(int i) {
    const Tensor x = test::random_tensor({kMb, kFeatures}, 1000 + static_cast<uint64_t>(i));
    std::vector<int32_t> y(kMb);
    for (int64_t j = 0; j < kMb; ++j)
      y[static_cast<std::size_t>(j)] = static_cast<int32_t>((i + j) % kClasses);
    trainer.step(x, y);
  }
  std::vector<float> weights() {
    std::vector<float> out;
    for (const Param& p : graph.params()) {
      out.insert(out.end(), p.value->data(), p.value->data() + p.value->numel());
    }
    return out;
  }
};

nlohmann::json test_meta(const std::string& optimizer) {
  return {{"model", "mlp"},
          {"optimizer", {{"lr", TrainRun::options(optimizer).lr}, {"momentum", 0.9}}},
          {"epoch", 3},
          {"global_step", 3},
          {"best_accuracy", 0.5},
          {"data_order", {{"seed", 42}, {"position", 24}}}};
}

class CheckpointResume : public ::testing::TestWithParam<const char*> {};

TEST_P(CheckpointResume, NextStepIsBitIdentical) {
  test::TempDir dir("ckpt");
  TrainRun original(GetParam(), 5);
  for (int i = 0; i < 3; ++i) original.step(i);
  const auto path = dir / "best.nnpckpt";
  write_checkpoint(path, capture_checkpoint(original.graph, original.trainer.optimizer(),
                                            test_meta(GetParam())));

  TrainRun resumed(GetParam(), 99);  // other initial weights, no optimizer state yet
  const Checkpoint ckpt = read_checkpoint(path);
  EXPECT_EQ(ckpt.meta["data_order"]["position"], 24);
  EXPECT_EQ(ckpt.meta["optimizer"]["name"], GetParam());
  EXPECT_EQ(ckpt.meta["optimizer"]["lr"], TrainRun::options(GetParam()).lr);  // as typed
  EXPECT_EQ(ckpt.meta["optimizer"]["momentum"], 0.9);
  restore_checkpoint(ckpt, resumed.graph, resumed.trainer.optimizer(), "mlp", path.string());
  EXPECT_EQ(resumed.weights(), original.weights());
  EXPECT_EQ(resumed.trainer.optimizer().steps(), original.trainer.optimizer().steps());
  EXPECT_EQ(resumed.trainer.optimizer().lr(), original.trainer.optimizer().lr());

  for (int i = 3; i < 5; ++i) {
    original.step(i);
    resumed.step(i);
  }
  const std::vector<float> a = original.weights(), b = resumed.weights();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

TEST(CheckpointResumeLr, ScheduledLrIsRestored) {
  TrainRun original("sgd", 5);
  original.step(0);
  original.trainer.optimizer().set_lr(0.0123f);  // where a schedule left it
  const Checkpoint c =
      capture_checkpoint(original.graph, original.trainer.optimizer(), test_meta("sgd"));
  TrainRun resumed("sgd", 6);
  restore_checkpoint(parse_checkpoint(serialize_checkpoint(c), "c"), resumed.graph,
                     resumed.trainer.optimizer(), "mlp", "c");
  EXPECT_EQ(resumed.trainer.optimizer().lr(), 0.0123f);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, CheckpointResume, ::testing::Values("adam", "sgd"));

// A small trained checkpoint (Adam: params and optim state) and its bytes.
Checkpoint trained_checkpoint() {
  TrainRun run("adam", 5);
  run.step(0);
  return capture_checkpoint(run.graph, run.trainer.optimizer(), test_meta("adam"));
}

std::string error_of(std::string_view bytes) {
  try {
    parse_checkpoint(bytes, "ckpt.bin");
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("ckpt.bin: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return msg;
  }
  ADD_FAILURE() << "parse_checkpoint accepted the bytes";
  return {};
}

void put_u32(std::string& b, std::size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
// Recomputes the trailing CRC so that a structural check, not the checksum, is exercised.
void reseal(std::string& b) {
  const uLong crc =
      crc32(0L, reinterpret_cast<const Bytef*>(b.data()), static_cast<uInt>(b.size() - 4));
  put_u32(b, b.size() - 4, static_cast<uint32_t>(crc));
}

TEST(CheckpointFormat, RoundTripsExactly) {
  const Checkpoint c = trained_checkpoint();
  const std::string bytes = serialize_checkpoint(c);
  EXPECT_EQ(bytes.substr(0, 8), "NNPFCKPT");
  const Checkpoint back = parse_checkpoint(bytes, "x");
  EXPECT_EQ(back.meta, c.meta);
  ASSERT_EQ(back.tensors.size(), c.tensors.size());
  for (std::size_t i = 0; i < c.tensors.size(); ++i) {
    EXPECT_EQ(back.tensors[i].name, c.tensors[i].name);
    EXPECT_EQ(back.tensors[i].shape, c.tensors[i].shape);
    EXPECT_EQ(back.tensors[i].data, c.tensors[i].data);
  }
  EXPECT_EQ(serialize_checkpoint(back), bytes);
  EXPECT_EQ(c.tensors.front().name, "params.fc1.weight");
  EXPECT_EQ(c.tensors.back().name.rfind("optim.exp_avg", 0), 0u);
}

TEST(CheckpointFormat, FlippedByteInEachRegionIsAChecksumError) {
  const std::string good = serialize_checkpoint(trained_checkpoint());
  uint64_t meta_len;
  std::memcpy(&meta_len, good.data() + 20, 8);
  const std::size_t meta_at = 28, table_at = 28 + meta_len;
  const std::size_t crc_at = good.size() - 4;
  // Metadata, table (tensor count, first entry), data (the last tensor's floats sit just before
  // the CRC) and the CRC itself.
  for (const std::size_t at :
       {meta_at + 3, table_at + 2, table_at + 9, crc_at - 7, crc_at - 1, crc_at + 2}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x20);
    EXPECT_NE(error_of(bad).find("checksum mismatch"), std::string::npos) << "byte " << at;
  }
  std::string bad = good;
  bad[1] = 'X';
  EXPECT_NE(error_of(bad).find("not an nnperf checkpoint"), std::string::npos);
  bad = good;
  put_u32(bad, 8, 2);
  EXPECT_NE(error_of(bad).find("unsupported checkpoint format version 2"), std::string::npos);
  bad = good;
  bad[12] = static_cast<char>(bad[12] ^ 1);  // the length field
  EXPECT_NE(error_of(bad).find("the header says"), std::string::npos);
}

TEST(CheckpointFormat, EveryTruncationIsRefused) {
  const std::string good = serialize_checkpoint(trained_checkpoint());
  for (int k = 0; k < 16; ++k) {
    const std::string msg = error_of(std::string_view(good).substr(0, good.size() * k / 16));
    EXPECT_TRUE(msg.find("truncated") != std::string::npos ||
                msg.find("not an nnperf checkpoint") != std::string::npos)
        << k << ": " << msg;
  }
  EXPECT_NE(error_of(good + "x").find("trailing bytes"), std::string::npos);
}

TEST(CheckpointFormat, StructuralErrorsAreNamed) {
  Checkpoint c;
  c.meta = {{"model", "t"}};
  c.tensors.push_back({"a", Shape{2, 3}, std::vector<float>(6, 1.0f)});
  c.tensors.push_back({"b", Shape{4}, std::vector<float>(4, 2.0f)});
  const std::string good = serialize_checkpoint(c);
  uint64_t meta_len;
  std::memcpy(&meta_len, good.data() + 20, 8);
  const std::size_t table_at = 28 + meta_len;
  // Entry 0: name length at +4, name "a" at +8, dtype at +9, rank at +13, dims at +17.
  std::string bad = good;
  put_u32(bad, table_at + 9, 7);
  reseal(bad);
  EXPECT_NE(error_of(bad).find("unknown dtype code 7"), std::string::npos);
  bad = good;
  bad[table_at + 8 + 45] = 'a';  // entry 1's name: after entry 0 (4+1+4+4+16+8+8 = 45 bytes)
  reseal(bad);
  EXPECT_NE(error_of(bad).find("tensor 'a' twice"), std::string::npos);
  bad = good;
  put_u32(bad, table_at + 13, 9);
  reseal(bad);
  EXPECT_NE(error_of(bad).find("rank 9"), std::string::npos);
  bad = good;
  put_u32(bad, table_at, 0x7fffffff);
  reseal(bad);
  EXPECT_NE(error_of(bad).find("claims 2147483647 tensors"), std::string::npos);
  bad = good;
  const uint64_t huge = uint64_t{1} << 39;
  std::memcpy(bad.data() + table_at + 17, &huge, 8);
  reseal(bad);
  EXPECT_NE(error_of(bad).find("more elements than the file has bytes"), std::string::npos);
  bad = good;
  bad[28] = '[';  // metadata "{...}" -> "[...}": not JSON
  reseal(bad);
  EXPECT_NE(error_of(bad).find("not valid JSON"), std::string::npos);

  Checkpoint arr;
  arr.meta = nlohmann::json::object();
  std::string a = serialize_checkpoint(arr);  // meta "{}" -> "[]"
  a[28] = '[';
  a[29] = ']';
  reseal(a);
  EXPECT_NE(error_of(a).find("a JSON array, expected an object"), std::string::npos);
}

class CheckpointRestore : public ::testing::Test {
 protected:
  Checkpoint ckpt = trained_checkpoint();
  TrainRun target{"adam", 7};
  const std::vector<float> before = target.weights();
  std::string refusal() {
    try {
      restore_checkpoint(ckpt, target.graph, target.trainer.optimizer(), "mlp", "best.ckpt");
    } catch (const Error& e) {
      EXPECT_EQ(target.weights(), before) << "a refused checkpoint changed the model";
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("best.ckpt: ", 0), 0u) << msg;
      return msg;
    }
    ADD_FAILURE() << "restore accepted the checkpoint";
    return {};
  }
  CheckpointTensor& tensor(const std::string& name) {
    for (CheckpointTensor& t : ckpt.tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no " + name);
  }
};

TEST_F(CheckpointRestore, OtherModel) {
  ckpt.meta["model"] = "resnet18";
  EXPECT_NE(refusal().find("checkpoint of model 'resnet18', not of 'mlp'"), std::string::npos);
}

TEST_F(CheckpointRestore, OtherOptimizer) {
  ckpt.meta["optimizer"]["name"] = "sgd";
  EXPECT_NE(refusal().find("optimizer 'sgd', not of 'adam'"), std::string::npos);
}

TEST_F(CheckpointRestore, ShapeChanged) {
  CheckpointTensor& t = tensor("params.fc2.weight");
  t.shape = Shape{16, 7};
  t.data.resize(112);
  EXPECT_NE(refusal().find("'params.fc2.weight' has shape [16, 7], the model expects [16, 8]"),
            std::string::npos);
}

TEST_F(CheckpointRestore, MissingTensor) {
  ckpt.tensors.erase(ckpt.tensors.begin() + 1);
  EXPECT_NE(refusal().find("has no tensor 'params.fc1.bias'"), std::string::npos);
}

TEST_F(CheckpointRestore, ExtraTensor) {
  ckpt.tensors.push_back({"params.fc9.weight", Shape{1}, {0.0f}});
  EXPECT_NE(refusal().find("'params.fc9.weight', which the model does not have"),
            std::string::npos);
}

TEST_F(CheckpointRestore, OptimizerStateShapeOrName) {
  CheckpointTensor& t = tensor("optim.exp_avg.0");
  t.shape = Shape{3};
  t.data.resize(3);
  EXPECT_NE(refusal().find("'optim.exp_avg.0' has shape [3]"), std::string::npos);
  tensor("optim.exp_avg.0").name = "optim.exp_avg.77";
  EXPECT_NE(refusal().find("names no parameter"), std::string::npos);
}

// restore_weights (train --init-weights): the weights of a full checkpoint or a weights file, the
// optimizer's state untouched; the same refusals, nothing changed by a refused file.
TEST(CheckpointWeights, FromFullCheckpointAndWeightsFileLeavingTheOptimizerAlone) {
  TrainRun source("adam", 5);
  for (int i = 0; i < 3; ++i) source.step(i);
  const Checkpoint full = capture_checkpoint(source.graph, source.trainer.optimizer(),
                                             test_meta("adam"));
  const Checkpoint weights = capture_weights(source.graph, {{"model", "mlp"}});
  for (const Checkpoint* c : {&full, &weights}) {
    TrainRun target("sgd", 7);
    ASSERT_NE(target.weights(), source.weights());
    restore_weights(*c, target.graph, "mlp", "w.ckpt");
    EXPECT_EQ(target.weights(), source.weights());
    EXPECT_EQ(target.trainer.optimizer().steps(), 0);
    EXPECT_TRUE(target.trainer.optimizer().state().empty());  // sgd's buffers: made at step 1
  }
}

TEST(CheckpointWeights, RefusalsNameTheFileAndChangeNothing) {
  TrainRun source("adam", 5);
  const Checkpoint good = capture_weights(source.graph, {{"model", "mlp"}});
  const auto refusal = [](const Checkpoint& c) {
    TrainRun target("sgd", 7);
    const std::vector<float> before = target.weights();
    try {
      restore_weights(c, target.graph, "mlp", "w.ckpt");
    } catch (const Error& e) {
      EXPECT_EQ(target.weights(), before) << "a refused file changed the model";
      return std::string(e.what());
    }
    ADD_FAILURE() << "restore_weights accepted the file";
    return std::string();
  };
  Checkpoint other = good;
  other.meta["model"] = "resnet18";
  EXPECT_EQ(refusal(other), "w.ckpt: checkpoint of model 'resnet18', not of 'mlp'");
  Checkpoint missing = good;
  missing.tensors.pop_back();
  EXPECT_NE(refusal(missing).find("w.ckpt: checkpoint has no tensor 'params."), std::string::npos);
  Checkpoint extra = good;
  extra.tensors.push_back({"buffers.bn9.running_mean", Shape{1}, {0.0f}});
  EXPECT_NE(refusal(extra).find("'buffers.bn9.running_mean', which the model does not have"),
            std::string::npos);
  Checkpoint reshaped = good;
  reshaped.tensors[0].shape = Shape{static_cast<int64_t>(reshaped.tensors[0].data.size())};
  EXPECT_NE(refusal(reshaped).find("has shape [" + std::to_string(reshaped.tensors[0].data.size()) +
                                   "], the model expects"),
            std::string::npos);
}

TEST(CheckpointFile, WrittenAtomicallyAndRefusedByName) {
  test::TempDir dir("ckpt");
  const Checkpoint c = trained_checkpoint();
  const auto path = dir / "epoch_001.nnpckpt";
  write_checkpoint(path, c);
  write_checkpoint(path, c);  // over an existing file
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(e.path().filename().string());
  }
  EXPECT_EQ(names, std::vector<std::string>{"epoch_001.nnpckpt"}) << "a temporary file was left";
  EXPECT_EQ(test::read_text(path), serialize_checkpoint(c));
  // A folder that cannot be written (here: a regular file in the way) leaves nothing behind.
  { std::ofstream(dir / "blocker") << "x"; }
  EXPECT_THROW(write_checkpoint(dir / "blocker" / "best.nnpckpt", c), Error);
  EXPECT_FALSE(std::filesystem::exists(dir / "blocker" / "best.nnpckpt"));
  // A cut file is refused naming the path.
  const std::string bytes = serialize_checkpoint(c);
  write_file_atomic(path, std::string_view(bytes).substr(0, bytes.size() / 2));
  try {
    read_checkpoint(path);
    FAIL() << "a truncated file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": checkpoint truncated", 0), 0u)
        << e.what();
  }
}

TEST(CheckpointCnn, Resnet18CarriesBatchNormRunningStatistics) {
  const ModelEntry& m = find_model("resnet18");
  Graph src = m.build(ModelOptions{});
  Rng rng(3);
  src.init(rng);
  int bn_layers = 0;
  for (int i = 1; i < src.size(); ++i) {
    if (auto* bn = dynamic_cast<BatchNorm2d*>(&src.layer(i))) {
      ++bn_layers;
      for (int64_t c = 0; c < bn->channels(); ++c) {
        bn->running_mean().data()[c] = 0.01f * static_cast<float>(i + c);
        bn->running_var().data()[c] = 1.0f + 0.001f * static_cast<float>(i * c);
      }
    }
  }
  EXPECT_EQ(bn_layers, 20);
  OptimizerOptions o;
  o.name = "sgd";
  auto opt = make_optimizer(o);
  const Checkpoint c = parse_checkpoint(
      serialize_checkpoint(capture_checkpoint(src, *opt, {{"model", "resnet18"}})), "r18");
  int buffers = 0;
  for (const CheckpointTensor& t : c.tensors) buffers += t.name.rfind("buffers.", 0) == 0;
  EXPECT_EQ(buffers, 2 * bn_layers);

  Graph dst = m.build(ModelOptions{});
  auto dst_opt = make_optimizer(o);
  restore_checkpoint(c, dst, *dst_opt, "resnet18", "r18");
  for (int i = 1; i < src.size(); ++i) {
    if (auto* a = dynamic_cast<BatchNorm2d*>(&src.layer(i))) {
      auto& b = dynamic_cast<BatchNorm2d&>(dst.layer(i));
      const int64_t n = a->channels();
      EXPECT_TRUE(std::equal(a->running_mean().data(), a->running_mean().data() + n,
                             b.running_mean().data()))
          << src.name(i);
      EXPECT_TRUE(
          std::equal(a->running_var().data(), a->running_var().data() + n, b.running_var().data()))
          << src.name(i);
    }
  }
  const auto pa = src.params(), pb = dst.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(std::memcmp(pa[i].value->data(), pb[i].value->data(),
                          static_cast<std::size_t>(pa[i].value->numel()) * sizeof(float)),
              0)
        << pa[i].name;
  }
}

}  // namespace
}  // namespace nnperf
