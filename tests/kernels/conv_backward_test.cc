// Tests for kernels/conv/conv_backward and conv_dispatch: every backward-data and
// backward-weights row against the float64 reference on random inputs at odd shapes (groups,
// strides, padding, dilation, 1x1, batch 1 and 5, maps down to 1x1), with the row's stated
// tolerance |y - ref| <= c * K * eps * sum|products| + eps * |ref|; the reference itself against
// central finite differences of the forward reference (it is the forward's exact adjoint); the
// dispatcher's guess, named, strict, forward-name and find-cache behaviour per pass.
#include "nnperf/kernels/conv/conv_backward.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv_crop.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/conv_internal.h"
#include "nnperf/kernels/conv/winograd_bw_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

const char* kProblems[] = {
    "mb2ic3ih7oc4kh3ph1",
    "mb5ic8ih5iw6oc6kh3sh2ph1",
    "mb1ic4ih9oc5kh1",
    "g2mb3ic6ih6oc4kh3ph1",
    "mb3ic5ih8oc3kh3ph2dh2",
    "mb4ic16ih1oc8kh3ph1",
    "mb2ic7ih11oc5kh5sh2ph2",
    "mb6ic9ih2oc10kh1sh2",
    "g3mb2ic6ih5oc9kh3sh1ph0",
    "mb5ic32ih3oc16kh3ph1",
    // Output rows wider than 16: the patch rows are built per output row, not from a tap table
    // (conv_internal.h); both paths must agree with the reference.
    "mb2ic3ih19iw21oc4kh3ph1",
    "mb1ic2ih40oc3kh5sh2ph2",
    // Large enough that on 2 threads the patch gathers and scatters (82944 floats per chunk) and
    // the dY gather of 16 4x4 maps (65536 floats) are split between the threads.
    "mb8ic32ih12oc24kh3ph1",
    "mb16ic32ih4oc256kh3ph1",
    "mb16ic64ih4oc256kh1",
    // gemm_tiled's bands (256 columns of whole output rows once K > 256): 7 bands of 6, 6, ...,
    // 4 rows per image; with groups 2 bands of 12 and 8 rows; from a tap table (ow <= 16) 16 and
    // 4 rows; a 1x1 layer read from (its dX written straight into) the planes in bands of 10, 10
    // and 4 rows. Backward-data's bands add into input rows their neighbours add into too.
    "mb2ic32ih40oc6kh3ph1",
    "g2mb2ic64ih20oc6kh3ph1",
    "mb2ic32ih20iw16oc8kh3ph1",
    "mb2ic300ih24oc4kh1",
    // winograd_nonfused's F(3x3, 2x2) tiles: 2700 tiles in chunks of 2048 that span images; odd
    // output sides (the last tile row and column half empty) with unequal padding.
    "mb3ic4ih60oc4kh3ph1",
    "mb2ic4ih9iw12oc5kh3ph0pw2",
    // Its transforms gather kPiece = 256 tiles at a time (winograd_bw_impl.h): a tile row of 265
    // tiles split between two pieces, and 2x2 and 1x3 maps, one tile per tile row.
    "mb1ic2ih3iw530oc3kh3ph1",
    "mb5ic6ih2oc7kh3ph1",
    "mb3ic3ih1iw3oc2kh3ph1",
    // Stride-2 col2im of rows wider than 16 outputs (4 columns per step, odd input widths: the
    // step must stop before the row's end).
    "mb2ic3ih37iw35oc4kh3sh2ph1",
    "mb1ic2ih21iw42oc3kh3sh2ph0",
    // gemm_live_taps: a 2x2 map at an odd batch and channel counts; taps dilated across the row
    // (one GEMM per tap); stride 2 with padding 2; outputs whose every tap reads padding; ...
    "mb17ic5ih2oc9kh3ph1",
    "mb3ic4ih7oc5kh3ph2dh2dw3",
    "mb4ic6ih3oc40kh3sh2ph2",
    "mb3ic3ih2oc5kh1ph1",
    // and a 1x1 map: one position, so backward-data's one GEMM takes both threads.
    "mb32ic128ih1oc256kh3ph1",
};

struct Grads {
  std::vector<float> dx, dw, db;
};

Grads run(const ConvBackwardAlgorithm& a, const ConvProblem& p, const std::vector<float>& x,
          const std::vector<float>& w, const std::vector<float>& dy, int threads) {
  Grads g{std::vector<float>(static_cast<std::size_t>(p.src_numel()), -7.0f),
          std::vector<float>(static_cast<std::size_t>(p.wei_numel()), -7.0f),
          std::vector<float>(static_cast<std::size_t>(p.oc), -7.0f)};  // overwritten, not added to
  Workspace ws;
  ws.reserve(std::max<std::size_t>(a.workspace_bytes(p, threads), 1));
  ConvBackwardArgs args;
  args.p = &p;
  args.src = x.data();
  args.wei = w.data();
  args.dst_grad = dy.data();
  args.src_grad = g.dx.data();
  args.wei_grad = g.dw.data();
  args.bias_grad = g.db.data();
  args.workspace = ws.data();
  args.threads = threads;
  a.run(args);
  return g;
}

TEST(ConvBackward, EveryRowMatchesTheFloat64Reference) {
  int checked = 0, transposed = 0, winograd = 0, live = 0, ungrouped = 0;
  for (const char* text : kProblems) {
    const ConvProblem p = parse_conv_problem(text);
    ungrouped += p.g == 1;
    const auto x = test::random_vector(p.src_numel(), 1);
    const auto w = test::random_vector(p.wei_numel(), 2);
    const auto dy = test::random_vector(p.dst_numel(), 3);
    std::vector<double> dx(x.size()), dw(w.size()), db(static_cast<std::size_t>(p.oc)),
        abs_dx(x.size()), abs_dw(w.size());
    conv2d_backward_reference(p, x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(),
                              abs_dx.data(), abs_dw.data());
    for (ConvPass pass : {ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
      for (const ConvBackwardAlgorithm& a : conv_backward_algorithms(pass)) {
        if (!a.why_not(p).empty()) continue;
        for (int threads : {1, 2}) {
          const Grads g = run(a, p, x, w, dy, threads);
          ++checked;
          transposed += std::string(a.name) == "transposed_forward";
          winograd += std::string(a.name) == "winograd_nonfused";
          live += std::string(a.name) == "gemm_live_taps";
          const bool data = pass == ConvPass::kBackwardData;
          const double k = data ? static_cast<double>(p.ocg() * p.kh * p.kw)
                                : static_cast<double>(p.mb * p.oh() * p.ow());
          const auto& got = data ? g.dx : g.dw;
          const auto& ref = data ? dx : dw;
          const auto& abs = data ? abs_dx : abs_dw;
          for (std::size_t i = 0; i < got.size(); ++i) {
            const double bound = a.tolerance_factor * k * test::kEps * abs[i] +
                                 test::kEps * std::abs(ref[i]) + 1e-30;
            ASSERT_LE(std::abs(got[i] - ref[i]), bound) << a.name << " " << to_string(pass) << " "
                                                        << text << " t" << threads << " at " << i;
          }
          if (!data) {
            for (int64_t o = 0; o < p.oc; ++o) {
              ASSERT_NEAR(g.db[static_cast<std::size_t>(o)], db[static_cast<std::size_t>(o)],
                          1e-5 * (1 + std::abs(db[static_cast<std::size_t>(o)])))
                  << a.name << " " << text;
            }
          }
        }
      }
    }
  }
  constexpr int kCount = static_cast<int>(std::size(kProblems));
  // Everywhere: gemm, gemm_batched and gemm_tiled for both passes; gemm_live_taps for both
  // without groups; transposed_forward (data) at stride 1 without groups, winograd_nonfused
  // (weights) for the 3x3 stride-1 undilated ones.
  EXPECT_EQ(live, 2 * 2 * ungrouped);
  EXPECT_EQ(checked, 2 * (kCount * 6 + transposed / 2 + winograd / 2 + live / 2));
  EXPECT_GE(transposed, 2 * 6);
  EXPECT_GE(winograd, 2 * 12);
}

// winograd_nonfused's transforms per SIMD level (winograd_bw_impl.h) only add and subtract, and
// the inverse's halvings are exact, so every path gives the same bits on any thread count; the
// portable path is held to the float64 reference too (EveryRowMatchesTheFloat64Reference runs the
// active one). Shapes: several chunks and pieces, tile rows split between pieces, one tile per
// tile row, odd output sides, groups, unequal padding, 1 to 3 threads.
TEST(ConvBackward, WinogradWeightsGiveTheSameBitsOnEveryPath) {
  // The last two are big enough for 2 and 3 threads (conv_useful_threads); the last has 4 chunks
  // and 17 input channels (a partial vector in the inverse transform).
  const char* problems[] = {"mb3ic4ih60oc4kh3ph1",       "mb1ic2ih3iw530oc3kh3ph1",
                            "mb5ic6ih2oc7kh3ph1",        "g2mb3ic6ih6oc4kh3ph1",
                            "mb2ic4ih9iw12oc5kh3ph0pw2", "mb8ic32ih12oc24kh3ph1",
                            "mb4ic17ih40oc16kh3ph1"};
  std::vector<const winograd_bw::Transforms*> paths = {&winograd_bw::kTransformsPortable};
  if (cpu_info().simd >= SimdLevel::kAvx2) paths.push_back(&winograd_bw::kTransformsAvx2);
  const auto& row = find_conv_backward(ConvPass::kBackwardWeights, "winograd_nonfused");
  for (const char* text : problems) {
    const ConvProblem p = parse_conv_problem(text);
    ASSERT_EQ(conv_winograd_bw_why_not(p), "") << text;
    const auto x = test::random_vector(p.src_numel(), 11);
    const auto w = test::random_vector(p.wei_numel(), 12);
    const auto dy = test::random_vector(p.dst_numel(), 13);
    std::vector<double> dx(x.size()), dw(w.size()), abs_dw(w.size());
    conv2d_backward_reference(p, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr,
                              nullptr, abs_dw.data());
    std::vector<float> first;
    for (const winograd_bw::Transforms* path : paths) {
      for (int threads : {1, 2, 3}) {
        std::vector<float> got(static_cast<std::size_t>(p.wei_numel()), -7.0f);
        Workspace ws;
        ws.reserve(row.workspace_bytes(p, threads));
        ConvBackwardArgs args;
        args.p = &p;
        args.src = x.data();
        args.dst_grad = dy.data();
        args.wei_grad = got.data();
        args.workspace = ws.data();
        args.threads = threads;
        conv_winograd_bw_run_with(*path, args);
        if (first.empty()) {
          const double k = static_cast<double>(p.mb * p.oh() * p.ow());
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_LE(std::abs(got[i] - dw[i]), row.tolerance_factor * k * test::kEps * abs_dw[i] +
                                                    test::kEps * std::abs(dw[i]) + 1e-30)
                << text << " portable at " << i;
          }
          first = got;
        } else {
          ASSERT_EQ(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)), 0)
              << text << (path == paths.front() ? " portable" : " avx2") << " t" << threads;
        }
      }
    }
  }
}

// gemm_tiled holds one band of the patch matrix per thread, where gemm holds a whole image's:
// ResNet-50's stem (K 147 x N 12544 per image, 7.4 MB) in bands of 3 of its 112 output rows.
TEST(ConvBackward, TiledWeightsHoldOneBandOfThePatchMatrix) {
  const ConvProblem stem = parse_conv_problem("mb8ic3ih224oc64kh7sh2ph3");
  const auto& gemm = find_conv_backward(ConvPass::kBackwardWeights, "gemm");
  const auto& tiled = find_conv_backward(ConvPass::kBackwardWeights, "gemm_tiled");
  const std::size_t image = 147 * 12544 * sizeof(float), band = 147 * 3 * 112 * sizeof(float);
  EXPECT_GE(gemm.workspace_bytes(stem, 1), image);
  EXPECT_GE(tiled.workspace_bytes(stem, 1), band);
  EXPECT_LT(tiled.workspace_bytes(stem, 1), image / 8);
  // A second thread adds its own band and its own dW^T (64 x 147 floats), nothing of an image.
  EXPECT_GE(tiled.workspace_bytes(stem, 2) - tiled.workspace_bytes(stem, 1),
            band + 64 * 147 * sizeof(float));
  EXPECT_LT(tiled.workspace_bytes(stem, 2), image / 4);
}

// The reference is the adjoint of the forward reference: with L = sum(dy * conv(x, w)),
// dL/dx and dL/dw by central differences in float64 (L is linear, so they are exact up to
// rounding).
TEST(ConvBackward, ReferenceIsTheForwardsAdjoint) {
  for (const char* text : {"mb2ic3ih5oc2kh3sh2ph1", "g2mb1ic4ih4oc2kh3ph2dh2"}) {
    const ConvProblem p = parse_conv_problem(text);
    auto x = test::random_vector(p.src_numel(), 4);
    auto w = test::random_vector(p.wei_numel(), 5);
    const auto dy = test::random_vector(p.dst_numel(), 6);
    std::vector<double> dx(x.size()), dw(w.size());
    conv2d_backward_reference(p, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr,
                              nullptr, nullptr);
    std::vector<double> y(static_cast<std::size_t>(p.dst_numel()));
    const auto loss = [&] {
      conv2d_reference(p, x.data(), w.data(), nullptr, y.data(), nullptr);
      double l = 0;
      for (std::size_t i = 0; i < y.size(); ++i) l += dy[i] * y[i];
      return l;
    };
    const float h = 0.25f;  // exact in float; L is linear in each input
    for (auto* v : {&x, &w}) {
      auto& grad = v == &x ? dx : dw;
      for (std::size_t i = 0; i < v->size(); ++i) {
        const float keep = (*v)[i];
        (*v)[i] = keep + h;
        const double up = loss();
        (*v)[i] = keep - h;
        const double down = loss();
        (*v)[i] = keep;
        // 1e-6: the perturbed inputs and the forward reference's terms pass through float.
        ASSERT_NEAR((up - down) / (2 * h), grad[i], 1e-6 * (1 + std::abs(grad[i])))
            << text << " " << i;
      }
    }
  }
}

double fake_backward_timer(const ConvBackwardAlgorithm& a, const ConvProblem&, int, double) {
  return std::string(a.name) == "gemm" ? 1.0 : 2.0;
}

TEST(ConvDispatch, EveryPassChoosesByItsOwnRegistry) {
  const ConvProblem s1 = parse_conv_problem("mb8ic64ih1oc64kh3ph1");
  const ConvProblem s2 = parse_conv_problem("mb8ic64ih8oc64kh3sh2ph1");
  ConvChoice c;
  ConvSelection sel;
  // guess: the lowest modelled cost.
  const auto& g = choose_conv_backward(ConvPass::kBackwardData, s1, 1, sel, "t", c);
  for (const auto& a : conv_backward_algorithms(ConvPass::kBackwardData)) {
    if (a.why_not(s1).empty()) {
      EXPECT_LE(g.cost(s1, 1), a.cost(s1, 1)) << a.name;
    }
  }
  EXPECT_EQ(c.requested, "guess");
  // A forward name applies to the forward pass only.
  sel.wanted = "winograd";
  EXPECT_EQ(&choose_conv_backward(ConvPass::kBackwardWeights, s1, 1, sel, "t", c),
            &choose_conv_backward(ConvPass::kBackwardWeights, s1, 1, ConvSelection{}, "t", c));
  EXPECT_STREQ(choose_conv_forward(s1, 1, sel, "t", c).name, "winograd");
  // Named: served, fallen back with the reason, or refused when strict.
  sel.wanted = "transposed_forward";
  EXPECT_STREQ(choose_conv_backward(ConvPass::kBackwardData, s1, 1, sel, "t", c).name,
               "transposed_forward");
  (void)choose_conv_backward(ConvPass::kBackwardData, s2, 1, sel, "t", c);
  EXPECT_NE(c.fallback_reason.find("stride"), std::string::npos) << c.fallback_reason;
  sel.strict = true;
  EXPECT_THROW(choose_conv_backward(ConvPass::kBackwardData, s2, 1, sel, "t", c), Error);
  // find: needs a timer; timed once per (pass, problem, threads).
  sel = ConvSelection{};
  sel.wanted = "find";
  EXPECT_THROW(choose_conv_backward(ConvPass::kBackwardData, s1, 1, sel, "t", c), Error);
  sel.time_backward = &fake_backward_timer;
  sel.exhaustive = true;
  clear_conv_find_cache();
  EXPECT_STREQ(choose_conv_backward(ConvPass::kBackwardData, s1, 1, sel, "t", c).name, "gemm");
  EXPECT_DOUBLE_EQ(c.find_ms, 1.0);
  EXPECT_STREQ(choose_conv_backward(ConvPass::kBackwardWeights, s1, 1, sel, "t", c).name, "gemm");
  EXPECT_EQ(conv_find_cache_size(), 2);
  (void)choose_conv_backward(ConvPass::kBackwardData, s1, 1, sel, "t", c);
  EXPECT_EQ(conv_find_cache_size(), 2);
  clear_conv_find_cache();
  EXPECT_THROW(find_conv_backward(ConvPass::kBackwardData, "nosuch"), UsageError);
}

// The crop copies the live taps of every OIHW plane and the un-crop writes them back with exact
// zeros in the dead taps, the same on one thread as on several (blocks of 1024 planes split
// between threads: 8 whole blocks, 3 with a partial last, under one; one live tap, a 1x3 and a
// 2x2 rectangle).
TEST(ConvCrop, CopiesTheLiveTapsOnAnyThreadCount) {
  for (const char* desc : {"mb2ic64ih1oc128kh3ph1", "mb1ic40ih1iw5oc70kh3ph1",
                           "mb2ic3ih2oc5kh3sh2ph1", "mb1ic48ih2oc64kh3sh2ph1"}) {
    const ConvProblem p = parse_conv_problem(desc);
    const ConvCrop c = conv_live_taps(p);
    ASSERT_TRUE(c.active) << desc;
    const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, planes = p.oc * p.icg();
    std::vector<float> w(static_cast<std::size_t>(p.wei_numel()));
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 9973) - 4000.5f;
    for (int threads : {1, 2, 3}) {
      std::vector<float> wc(static_cast<std::size_t>(planes * kh * kw), -1.0f);
      conv_crop_weights(p, c, w.data(), wc.data(), threads);
      std::vector<float> back(w.size(), 7.0f);
      conv_uncrop_weight_grad(p, c, wc.data(), back.data(), threads);
      for (int64_t n = 0; n < planes; ++n) {
        for (int64_t i = 0; i < p.kh; ++i) {
          for (int64_t j = 0; j < p.kw; ++j) {
            const bool live = i >= c.i0 && i < c.i1 && j >= c.j0 && j < c.j1;
            const float orig = w[static_cast<std::size_t>((n * p.kh + i) * p.kw + j)];
            if (live) {
              ASSERT_EQ(wc[static_cast<std::size_t>((n * kh + i - c.i0) * kw + j - c.j0)], orig)
                  << desc << " threads " << threads;
            }
            ASSERT_EQ(back[static_cast<std::size_t>((n * p.kh + i) * p.kw + j)], live ? orig : 0.0f)
                << desc << " threads " << threads << " plane " << n << " tap " << i << "," << j;
          }
        }
      }
    }
  }
}

// Every row of the patch matrix, by the band function (stride 2: the 4-wide shuffles, whose
// loads stop 8 floats before the row's end) and by the tap table, equals a plain loop over the
// definition; col2im by both adds each entry back where the plain loop reads it. Odd widths,
// padding past a kernel's reach, dilation, rows of 1 to 20 outputs.
TEST(Im2col, RowsAndTheirAdjointMatchAPlainLoop) {
  for (const char* desc :
       {"mb1ic2ih32oc1kh7sh2ph3", "mb1ic3ih9iw33oc1kh3sh2ph1", "mb1ic2ih7iw40oc1kh5sh2ph4",
        "mb1ic2ih8iw23oc1kh3sh2ph2dh2dw2", "mb1ic1ih6iw2oc1kh3sh2ph1", "mb1ic2ih5iw17oc1kh1sh2",
        "mb1ic2ih6iw25oc1kh2sh2", "mb1ic2ih9iw13oc1kh3ph1", "mb1ic2ih7iw19oc1kh3sh3ph1"}) {
    const ConvProblem p = parse_conv_problem(desc);
    const int64_t k = p.ic * p.kh * p.kw, n = p.oh() * p.ow(), plane = p.ih * p.iw;
    std::vector<float> x(static_cast<std::size_t>(p.ic * plane));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) + 0.5f;
    std::vector<float> want(static_cast<std::size_t>(k * n));
    for (int64_t r = 0; r < k; ++r) {
      const int64_t c = r / (p.kh * p.kw), ky = r / p.kw % p.kh, kx = r % p.kw;
      for (int64_t oy = 0; oy < p.oh(); ++oy) {
        for (int64_t ox = 0; ox < p.ow(); ++ox) {
          const int64_t iy = oy * p.sh - p.ph + ky * p.dh, ix = ox * p.sw - p.pw + kx * p.dw;
          const bool in = iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
          want[static_cast<std::size_t>(r * n + oy * p.ow() + ox)] =
              in ? x[static_cast<std::size_t>(c * plane + iy * p.iw + ix)] : 0.0f;
        }
      }
    }
    std::vector<int32_t> table(static_cast<std::size_t>(p.kh * p.kw * n));
    conv_fill_tap_table(p, table.data());
    for (const bool by_table : {false, true}) {
      std::vector<float> row(static_cast<std::size_t>(n) + 1, -3.0f);  // +1: no write past n
      std::vector<float> back(x.size(), 0.0f), want_back(x.size(), 0.0f);
      for (int64_t r = 0; r < k; ++r) {
        if (by_table) {
          conv_im2col_row_table(p, table.data(), x.data(), r, row.data());
        } else {
          conv_im2col_row_band(p, x.data(), r, 0, p.oh(), row.data());
        }
        for (int64_t j = 0; j < n; ++j) {
          ASSERT_EQ(row[static_cast<std::size_t>(j)], want[static_cast<std::size_t>(r * n + j)])
              << desc << (by_table ? " table" : " band") << " row " << r << " column " << j;
        }
        ASSERT_EQ(row[static_cast<std::size_t>(n)], -3.0f) << desc;
      }
      // col2im of an all-distinct dcol: each pixel receives the entries that read it.
      std::vector<float> dcol(static_cast<std::size_t>(k * n));
      for (std::size_t i = 0; i < dcol.size(); ++i) dcol[i] = static_cast<float>(i % 31) + 0.25f;
      for (int64_t r = 0; r < k; ++r) {
        const int64_t c = r / (p.kh * p.kw), ky = r / p.kw % p.kh, kx = r % p.kw;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t iy = j / p.ow() * p.sh - p.ph + ky * p.dh;
          const int64_t ix = j % p.ow() * p.sw - p.pw + kx * p.dw;
          if (iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw) {
            want_back[static_cast<std::size_t>(c * plane + iy * p.iw + ix)] +=
                dcol[static_cast<std::size_t>(r * n + j)];
          }
        }
      }
      for (int64_t c = 0; c < p.ic; ++c) {
        const float* rows = dcol.data() + c * p.kh * p.kw * n;
        float* out = back.data() + c * plane;
        if (by_table) {
          conv_col2im_plane_table(p, table.data(), rows, n, 0, n, out);
        } else {
          conv_col2im_band(p, rows, n, 0, p.oh(), out);
        }
      }
      for (std::size_t i = 0; i < back.size(); ++i) {
        ASSERT_FLOAT_EQ(back[i], want_back[i])
            << desc << (by_table ? " table" : " band") << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace nnperf
