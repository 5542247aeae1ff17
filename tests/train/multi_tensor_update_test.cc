// The GPU optimizers' one-launch update (kernels/multi_tensor_update.h) replayed on the host,
// block by block and thread by thread as the kernel runs it: every element of every tensor
// visited exactly once, and three steps of each torch.optim rule equal to the CPU optimizer's,
// bit for bit (the same float operations in the same order; the device, which may contract them
// into FMAs, is checked against float64 in tests/gpu/cuda_kernels_test.cc).
#include "nnperf/kernels/multi_tensor_update.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/train/optimizer.h"
#include "test_util.h"

namespace nnperf {
namespace {

constexpr int64_t kThreads = 256;  // the kernel's block (cuda_index.h's kBlock)

// Runs step(tensor, j) as a launch over `chunks` would: each block, each of its threads.
template <typename Step>
void replay(const std::vector<UpdateChunk>& chunks, const std::vector<UpdateTensor>& rows,
            Step step) {
  for (const UpdateChunk& ch : chunks) {
    for (int64_t thread = 0; thread < kThreads; ++thread) {
      walk_chunk(ch, rows.data(), thread, kThreads, step);
    }
  }
}

TEST(MultiTensorUpdate, ChunksCoverEveryElementOnce) {
  const std::vector<int64_t> sizes = {
      0, 1, 255, kUpdateChunk, kUpdateChunk + 1, 3 * kUpdateChunk + 17, 0, 5};
  const std::vector<UpdateChunk> chunks = update_chunks(sizes);
  // Each tensor's values count the visits to each element.
  std::vector<std::vector<float>> visits;
  std::vector<UpdateTensor> rows;
  for (int64_t n : sizes) visits.emplace_back(static_cast<std::size_t>(n), 0.0f);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    rows.push_back({visits[i].data(), nullptr, nullptr, nullptr, sizes[i]});
  }
  std::size_t blocks = 0;
  int32_t last = -1;
  int64_t covered = 0, total = 0;
  for (const UpdateChunk& ch : chunks) {
    ASSERT_GE(ch.tensor, 0);
    ASSERT_LT(static_cast<std::size_t>(ch.tensor), sizes.size());
    EXPECT_LT(ch.begin, ch.end);
    EXPECT_LE(ch.end, sizes[static_cast<std::size_t>(ch.tensor)]);  // never past its tensor
    EXPECT_LE(ch.end - ch.begin, kUpdateChunk);
    covered += ch.end - ch.begin;
    EXPECT_EQ(ch.begin % kUpdateChunk, 0);
    EXPECT_GE(ch.tensor, last);  // tensor by tensor
    last = ch.tensor;
  }
  replay(chunks, rows, [](const UpdateTensor& t, int64_t j) { t.w[j] += 1.0f; });
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    for (std::size_t j = 0; j < visits[i].size(); ++j) {
      ASSERT_EQ(visits[i][j], 1.0f) << "tensor " << i << " element " << j;
    }
    blocks += static_cast<std::size_t>((sizes[i] + kUpdateChunk - 1) / kUpdateChunk);
    total += sizes[i];
  }
  EXPECT_EQ(chunks.size(), blocks);
  EXPECT_EQ(covered, total);
  EXPECT_TRUE(update_chunks({}).empty());
}

// Three tensors: a vector with a tail, one just over a chunk (two blocks), a small matrix.
struct Params {
  std::vector<Tensor> w, g;
  Params() {
    const std::vector<Shape> shapes = {Shape{11}, Shape{kUpdateChunk + 1}, Shape{2, 3}};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      w.push_back(test::random_tensor(shapes[i], 10 + i));
      g.push_back(Tensor::zeros(shapes[i]));
    }
  }
  void set_grads(int step) {
    Rng rng(200 + static_cast<uint64_t>(step));
    for (Tensor& t : g) rng.fill_uniform(std::span<float>(t.data(), t.numel()), -1.0f, 1.0f);
  }
  std::vector<Param> list() {
    std::vector<Param> p;
    for (std::size_t i = 0; i < w.size(); ++i) p.push_back({std::to_string(i), &w[i], &g[i]});
    return p;
  }
};

struct Case {
  std::string name;
  OptimizerOptions o;
};

class ReplayedUpdate : public ::testing::TestWithParam<Case> {};

TEST_P(ReplayedUpdate, TakesTheCpuOptimizersStepsExactly) {
  const OptimizerOptions& o = GetParam().o;
  const bool adam = o.name == "adam", momentum = !adam && o.momentum != 0.0;
  Params cpu, replayed;
  std::vector<std::vector<float>> s1, s2;  // the replay's state, zeros as the trainers start it
  std::vector<UpdateTensor> rows;
  std::vector<int64_t> sizes;
  for (std::size_t i = 0; i < replayed.w.size(); ++i) {
    const auto n = replayed.w[i].numel();
    s1.emplace_back(static_cast<std::size_t>(n), 0.0f);
    s2.emplace_back(static_cast<std::size_t>(n), 0.0f);
    rows.push_back({replayed.w[i].data(), replayed.g[i].data(),
                    adam || momentum ? s1.back().data() : nullptr,
                    adam ? s2.back().data() : nullptr, n});
    sizes.push_back(n);
  }
  const std::vector<UpdateChunk> chunks = update_chunks(sizes);
  const std::unique_ptr<Optimizer> opt = make_optimizer(o);
  const auto lr = static_cast<float>(o.lr);
  for (int step = 0; step < 3; ++step) {
    cpu.set_grads(step);
    replayed.set_grads(step);
    opt->step(cpu.list());
    // The coefficients as the GPU trainers compute them (train/cuda_cnn_step.cc, cuda_mlp.cc).
    if (adam) {
      const AdamCoefficients c = adam_coefficients(o, lr, step + 1);
      replay(chunks, rows, [&](const UpdateTensor& t, int64_t j) {
        adam_element(t.w, t.grad, t.s1, t.s2, j, c);
      });
    } else {
      const SgdCoefficients c = sgd_coefficients(o, lr, step == 0);  // buffers made at step 0
      replay(chunks, rows,
             [&](const UpdateTensor& t, int64_t j) { sgd_element(t.w, t.grad, t.s1, j, c); });
    }
    for (std::size_t i = 0; i < cpu.w.size(); ++i) {
      for (int64_t j = 0; j < cpu.w[i].numel(); ++j) {
        ASSERT_EQ(replayed.w[i].data()[j], cpu.w[i].data()[j])
            << "step " << step << " tensor " << i << " element " << j << std::hexfloat << " "
            << replayed.w[i].data()[j] << " " << cpu.w[i].data()[j];
      }
    }
  }
  // The state too, where the CPU optimizer keeps it (torch.optim's names).
  for (const auto& [name, t] : opt->state()) {
    const std::size_t i = std::stoul(name.substr(name.rfind('.') + 1));
    const std::vector<float>& mine = name.rfind("exp_avg_sq", 0) == 0 ? s2[i] : s1[i];
    for (int64_t j = 0; j < t->numel(); ++j) {
      ASSERT_EQ(mine[static_cast<std::size_t>(j)], t->data()[j]) << name << " element " << j;
    }
  }
}

// A momentum buffer loaded from a checkpoint at step 0 (a file another program wrote) is kept, not
// replaced by the gradient: the CPU optimizer keeps it because it did not create it, and the GPU
// trainers pass fresh_state = false for loaded state.
TEST(MultiTensorUpdate, SgdKeepsALoadedMomentumBufferAtStepZero) {
  OptimizerOptions o;
  o.name = "sgd";
  o.lr = 0.05;
  o.momentum = 0.9;
  Params cpu, replayed;
  const std::unique_ptr<Optimizer> opt = make_optimizer(o);
  std::vector<std::pair<std::string, Tensor>> state;
  std::vector<std::vector<float>> s1;
  std::vector<UpdateTensor> rows;
  std::vector<int64_t> sizes;
  for (std::size_t i = 0; i < replayed.w.size(); ++i) {
    Tensor buf = test::random_tensor(replayed.w[i].shape(), 40 + i);
    s1.emplace_back(buf.data(), buf.data() + buf.numel());
    state.emplace_back(fmt::format("momentum_buffer.{}", i), std::move(buf));
    rows.push_back({replayed.w[i].data(), replayed.g[i].data(), s1.back().data(), nullptr,
                    replayed.w[i].numel()});
    sizes.push_back(replayed.w[i].numel());
  }
  opt->load_state(state, 0);
  cpu.set_grads(0);
  replayed.set_grads(0);
  opt->step(cpu.list());
  const SgdCoefficients c = sgd_coefficients(o, static_cast<float>(o.lr), false);
  replay(update_chunks(sizes), rows,
         [&](const UpdateTensor& t, int64_t j) { sgd_element(t.w, t.grad, t.s1, j, c); });
  for (std::size_t i = 0; i < cpu.w.size(); ++i) {
    for (int64_t j = 0; j < cpu.w[i].numel(); ++j) {
      ASSERT_EQ(replayed.w[i].data()[j], cpu.w[i].data()[j]) << "tensor " << i << " element " << j;
    }
  }
  // The case matters: the fresh-buffer step (keep 0) from the same weights lands elsewhere.
  Params fresh;
  fresh.set_grads(0);
  std::vector<float> zeros(static_cast<std::size_t>(fresh.w[0].numel()), 0.0f);
  const UpdateTensor row{fresh.w[0].data(), fresh.g[0].data(), zeros.data(), nullptr,
                         fresh.w[0].numel()};
  const SgdCoefficients first = sgd_coefficients(o, static_cast<float>(o.lr), true);
  const std::vector<int64_t> one_size = {row.n};
  replay(update_chunks(one_size), {row},
         [&](const UpdateTensor& t, int64_t j) { sgd_element(t.w, t.grad, t.s1, j, first); });
  int differ = 0;
  for (int64_t j = 0; j < row.n; ++j) differ += fresh.w[0].data()[j] != cpu.w[0].data()[j];
  EXPECT_GT(differ, row.n / 2);
}

OptimizerOptions sgd(double momentum, double weight_decay, bool nesterov) {
  OptimizerOptions o;
  o.name = "sgd";
  o.lr = 0.05;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  o.nesterov = nesterov;
  return o;
}

OptimizerOptions adam(double weight_decay) {
  OptimizerOptions o;
  o.name = "adam";
  o.lr = 0.01;
  o.weight_decay = weight_decay;
  return o;
}

INSTANTIATE_TEST_SUITE_P(Rules, ReplayedUpdate,
                         ::testing::Values(Case{"sgd_plain", sgd(0.0, 0.0, false)},
                                           Case{"sgd_momentum", sgd(0.9, 0.0, false)},
                                           Case{"sgd_nesterov_decay", sgd(0.9, 5e-4, true)},
                                           Case{"adam", adam(0.0)}, Case{"adam_decay", adam(1e-2)}),
                         [](const auto& p) { return p.param.name; });

}  // namespace
}  // namespace nnperf
