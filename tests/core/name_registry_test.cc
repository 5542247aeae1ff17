// The one name rule (core/name_registry.h) and every table that uses it: GEMM, forward and backward
// convolution algorithms, activations, models.
#include "nnperf/core/name_registry.h"

#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/registry.h"

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
}

// Every table: no two rows share a key, and each row is found by its own name and by a spelling
// in upper case with '-' for '_'.
template <class T>
void expect_table(std::span<const T> rows, const auto& find, const std::string& what) {
  EXPECT_EQ(Registry<T>(rows).clash(), "") << what;
  for (const T& row : rows) {
    std::string shouted;
    for (const char c : std::string(row.name)) {
      shouted += c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    EXPECT_EQ(&find(row.name), &row) << what << " " << row.name;
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
  // The same rule for names that were matched exactly or by case alone before.
  EXPECT_STREQ(find_gemm("Blas").name, "blas");
  EXPECT_STREQ(find_model("MobileNet-V2").name, "mobilenet_v2");
  EXPECT_STREQ(find_model("ResNet50").name, "resnet50");
  EXPECT_STREQ(find_activation("swish").name, "SiLU");
  // Unknown names are refused with the table's names.
  EXPECT_THROW(find_gemm("blass"), UsageError);
  EXPECT_THROW(find_conv("winograd2"), UsageError);
  EXPECT_THROW(find_model("resnet"), UsageError);
  EXPECT_THROW(find_activation("relu7"), UsageError);
}

}  // namespace
}  // namespace nnperf
