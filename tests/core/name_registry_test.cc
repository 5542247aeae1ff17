// The one name rule (core/name_registry.h) and every table that uses it: GEMM, forward and backward
// convolution algorithms (the project's and cuDNN's), activations, models, optimizers (and the
// complexity model's optimizer costs), the GPU's BatchNorm algorithms.
#include "nnperf/core/name_registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/analysis/complexity.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/registry.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {
namespace {

struct Row {
  const char* name;
};

TEST(Registry, OneKeyForCaseSeparatorsAndSpaces) {
  EXPECT_EQ(registry_key("Leaky_ReLU"), "leakyrelu");
  EXPECT_EQ(registry_key("leaky-relu"), "leakyrelu");
  EXPECT_EQ(registry_key(" Leaky ReLU "), "leakyrelu");
  EXPECT_EQ(registry_key("IM2COL-GEMM"), registry_key("im2col_gemm"));
  EXPECT_EQ(registry_key(""), "");
  EXPECT_NE(registry_key("fft"), registry_key("fft_tiling"));
}

TEST(Registry, SameKeyComparesWithoutBuildingKeys) {
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"Leaky_ReLU", "leakyrelu"},
                                                        {"-leaky relu-", "LEAKYRELU"},
                                                        {"", "_- "},
                                                        {"im2col_gemm", "Im2Col-Gemm"},
                                                        {"fft", "fft_tiling"},
                                                        {"fft_tiling", "fft"},
                                                        {"relu", "relu6"},
                                                        {"a", ""},
                                                        {"winograd", "winograd_nonfused"}}) {
    EXPECT_EQ(same_registry_key(a, b), registry_key(a) == registry_key(b)) << a << " / " << b;
    EXPECT_EQ(same_registry_key(b, a), same_registry_key(a, b)) << a << " / " << b;
  }
}

TEST(Registry, TablesOfPlainNames) {
  constexpr std::array<const char*, 3> names = {"implicit_gemm", "fft", "fft_tiling"};
  const Registry<const char*> r(names);
  EXPECT_EQ(r.find("Implicit-GEMM"), &names[0]);
  EXPECT_EQ(r.find("FFT Tiling"), &names[2]);
  EXPECT_EQ(r.find("tiling"), nullptr);
  EXPECT_EQ(r.names(), "implicit_gemm, fft, fft_tiling");
  EXPECT_EQ(r.alternatives(), "implicit_gemm, fft or fft_tiling");
  EXPECT_EQ(Registry<const char*>(std::span(names).first(2)).alternatives(),
            "implicit_gemm or fft");
  EXPECT_EQ(Registry<const char*>(std::span(names).first(1)).alternatives(), "implicit_gemm");
  EXPECT_EQ(r.clash(), "");
}

TEST(Registry, FindsRowsByKeyAndAliasInTableOrder) {
  constexpr std::array<Row, 3> rows = {{{"im2col_gemm"}, {"fft"}, {"SiLU"}}};
  constexpr std::array<RegistryAlias, 1> aliases = {{{"swish", "SiLU"}}};
  const Registry<Row> r(rows, aliases);
  ASSERT_NE(r.find("Im2Col-Gemm"), nullptr);
  EXPECT_STREQ(r.find("Im2Col-Gemm")->name, "im2col_gemm");
  EXPECT_EQ(r.find("SWISH"), &rows[2]);
  EXPECT_EQ(r.find("silu"), &rows[2]);
  EXPECT_EQ(r.find("ff"), nullptr);
  EXPECT_EQ(r.find(""), nullptr);
  EXPECT_EQ(r.names(), "im2col_gemm, fft, SiLU");
  EXPECT_EQ(r.names([](const Row& x) { return std::string(x.name).size() > 3; }),
            "im2col_gemm, SiLU");
  EXPECT_EQ(r.clash(), "");
}

TEST(Registry, ClashesAreFound) {
  constexpr std::array<Row, 2> twins = {{{"leaky_relu"}, {"LeakyReLU"}}};
  EXPECT_EQ(Registry<Row>(twins).clash(), "leaky_relu and LeakyReLU are one name");
  constexpr std::array<Row, 2> rows = {{{"relu"}, {"gelu"}}};
  constexpr std::array<RegistryAlias, 1> shadow = {{{"ReLU", "gelu"}}};
  EXPECT_EQ(Registry<Row>(rows, shadow).clash(), "alias ReLU is row relu's name");
  constexpr std::array<RegistryAlias, 1> dangling = {{{"swish", "silu"}}};
  EXPECT_EQ(Registry<Row>(rows, dangling).clash(), "alias swish names no row");
  constexpr std::array<RegistryAlias, 2> twice = {{{"rect", "relu"}, {"RECT", "gelu"}}};
  EXPECT_EQ(Registry<Row>(rows, twice).clash(), "alias RECT is given twice");
}

// Every table: no two rows share a key, and each row is found by its own name and by a spelling
// in upper case with '-' for '_'.
template <class T>
void expect_table(std::span<const T> rows, const auto& find, const std::string& what) {
  EXPECT_EQ(Registry<T>(rows).clash(), "") << what;
  for (const T& row : rows) {
    const std::string name(registry_row_name(row));
    std::string shouted;
    for (const char c : name) {
      shouted += c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    EXPECT_EQ(&find(name), &row) << what << " " << name;
    EXPECT_EQ(&find(shouted), &row) << what << " " << shouted;
  }
}

TEST(Registry, EveryTableFollowsTheRule) {
  expect_table(
      gemm_algorithms(), [](std::string_view n) -> auto& { return find_gemm(n); }, "gemm");
  expect_table(
      conv_algorithms(), [](std::string_view n) -> auto& { return find_conv(n); }, "conv");
  for (const ConvPass pass : {ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
    expect_table(
        conv_backward_algorithms(pass),
        [pass](std::string_view n) -> auto& { return find_conv_backward(pass, n); },
        to_string(pass));
  }
  expect_table(
      activation_kernels(), [](std::string_view n) -> auto& { return find_activation(n); },
      "activation");
  expect_table(
      model_registry(), [](std::string_view n) -> auto& { return find_model(n); }, "model");
  expect_table(
      optimizer_registry(), [](std::string_view n) -> auto& { return find_optimizer(n); },
      "optimizer");
  expect_table(
      optimizer_costs(), [](std::string_view n) -> auto& { return find_optimizer_cost(n); },
      "optimizer cost");
  for (const ConvPass pass :
       {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
    const auto names = cudnn::algorithms(pass);
    expect_table(
        names, [ pass, names ](std::string_view n) -> auto& {
          static const char* const kNone = nullptr;  // a miss: compares unequal to every row
          const auto it = std::find(names.begin(), names.end(), cudnn::find_algorithm(pass, n));
          return it != names.end() ? *it : kNone;
        },
        std::string("cuDNN ") + to_string(pass));
  }
  // guess and find: a table of their own, whose names no algorithm table (CPU or cuDNN) shares.
  expect_table(
      conv_choices(), [](std::string_view n) -> auto& {
        static const char* const kNone = nullptr;
        const auto choices = conv_choices();
        const auto it = std::find(choices.begin(), choices.end(), find_conv_choice(n));
        return it != choices.end() ? *it : kNone;
      },
      "conv choice");
  for (const char* choice : conv_choices()) {
    EXPECT_EQ(Registry<ConvAlgorithm>(conv_algorithms()).find(choice), nullptr) << choice;
    for (const ConvPass pass :
         {ConvPass::kForward, ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
      EXPECT_EQ(cudnn::find_algorithm(pass, choice), nullptr) << choice;
      if (pass != ConvPass::kForward) {
        EXPECT_EQ(Registry<ConvBackwardAlgorithm>(conv_backward_algorithms(pass)).find(choice),
                  nullptr)
            << choice;
      }
    }
  }
  EXPECT_STREQ(find_conv_choice("FIND"), "find");
  EXPECT_STREQ(find_conv_choice("Guess"), "guess");
  EXPECT_EQ(find_conv_choice("finder"), nullptr);
  EXPECT_EQ(find_conv_choice(""), nullptr);
  EXPECT_EQ(canonical_conv_algorithm("--algorithm", "FIND"), "find");
  EXPECT_EQ(canonical_conv_algorithm("--algorithm", "Implicit-GEMM"), "implicit_gemm");
  try {
    (void)canonical_conv_algorithm("--algorithm", "winograd2");
    ADD_FAILURE() << "winograd2 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(
        std::string(e.what()).find("--algorithm winograd2: expected guess or find, or one of"),
        std::string::npos)
        << e.what();
  }
  // The complexity model prices the optimizers the trainers have, row for row.
  ASSERT_EQ(optimizer_costs().size(), optimizer_registry().size());
  for (std::size_t i = 0; i < optimizer_costs().size(); ++i) {
    EXPECT_STREQ(optimizer_costs()[i].name, optimizer_registry()[i].name);
  }
  // The same rule for names that were matched exactly or by case alone before.
  EXPECT_STREQ(find_optimizer("SGD").name, "sgd");
  EXPECT_EQ(make_optimizer({.name = "Adam"})->name(), "adam");
  EXPECT_STREQ(find_optimizer_cost("ADAM").name, "adam");
  EXPECT_STREQ(cudnn::find_algorithm(ConvPass::kForward, "Implicit-Precomp-GEMM"),
               "implicit_precomp_gemm");
  EXPECT_EQ(cudnn::checked_algorithm(ConvPass::kBackwardData, "--algorithms", "ALGO-1"), "algo_1");
  EXPECT_EQ(cudnn::checked_batchnorm_algorithm("--batchnorm", "cuDNN"), "cudnn");
  EXPECT_EQ(cudnn::checked_batchnorm_algorithm("--batchnorm", "OWN"), "own");
  EXPECT_STREQ(find_gemm("Blas").name, "blas");
  EXPECT_STREQ(find_model("MobileNet-V2").name, "mobilenet_v2");
  EXPECT_STREQ(find_model("ResNet50").name, "resnet50");
  EXPECT_STREQ(find_activation("swish").name, "SiLU");
  // Unknown names are refused with the table's names.
  EXPECT_THROW(find_gemm("blass"), UsageError);
  EXPECT_THROW(find_conv("winograd2"), UsageError);
  EXPECT_THROW(find_model("resnet"), UsageError);
  EXPECT_THROW(find_activation("relu7"), UsageError);
  EXPECT_THROW(find_optimizer("lion"), UsageError);
  EXPECT_THROW(find_optimizer_cost("lion"), UsageError);
  EXPECT_EQ(cudnn::find_algorithm(ConvPass::kBackwardWeights, "direct"), nullptr);
  try {
    (void)cudnn::checked_algorithm(ConvPass::kForward, "--algorithms", "winograd2");
    ADD_FAILURE() << "winograd2 accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--algorithms winograd2: not one of cuDNN's"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)cudnn::checked_batchnorm_algorithm("--batchnorm", "miopen"), UsageError);
}

}  // namespace
}  // namespace nnperf
