// The convolution descriptor: benchdnn strings parse to the right fields and print back the same
// (canonical strings round-trip both ways), FLOP/MAC counts and output sizes, and every kind of
// bad descriptor fails with a UsageError naming the descriptor, the problem and the valid terms.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {
namespace {

TEST(ConvProblem, ParsesTheIssueExamples) {
  const ConvProblem a = parse_conv_problem("mb1ic64ih56oc64kh3ph1");
  EXPECT_EQ(a.g, 1);
  EXPECT_EQ(a.mb, 1);
  EXPECT_EQ(a.ic, 64);
  EXPECT_EQ(a.ih, 56);
  EXPECT_EQ(a.iw, 56);
  EXPECT_EQ(a.oc, 64);
  EXPECT_EQ(a.kh, 3);
  EXPECT_EQ(a.kw, 3);
  EXPECT_EQ(a.sh, 1);
  EXPECT_EQ(a.sw, 1);
  EXPECT_EQ(a.ph, 1);
  EXPECT_EQ(a.pw, 1);
  EXPECT_EQ(a.dh, 1);
  EXPECT_EQ(a.dw, 1);
  EXPECT_EQ(a.oh(), 56);
  EXPECT_EQ(a.ow(), 56);

  const ConvProblem dw = parse_conv_problem("g32mb1ic32ih112oc32kh3ph1");
  EXPECT_EQ(dw.g, 32);
  EXPECT_EQ(dw.icg(), 1);
  EXPECT_EQ(dw.ocg(), 1);
  EXPECT_EQ(dw.oh(), 112);
  EXPECT_EQ(dw.wei_numel(), 32 * 9);

  const ConvProblem stem = parse_conv_problem("ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(stem.mb, 1);
  EXPECT_EQ(stem.sw, 2);
  EXPECT_EQ(stem.pw, 3);
  EXPECT_EQ(stem.oh(), 112);
  EXPECT_EQ(stem.ow(), 112);
  EXPECT_EQ(stem.str(), "mb1ic3ih224oc64kh7sh2ph3");
}

TEST(ConvProblem, OutputSizesWithStrideDilationAndAsymmetry) {
  // oh = (ih + 2ph - dh*(kh-1) - 1) / sh + 1
  const ConvProblem p = parse_conv_problem("mb2ic4ih11iw13oc6kh3kw5sh2sw1ph1pw2dh2dw1");
  EXPECT_EQ(p.oh(), (11 + 2 - 2 * 2 - 1) / 2 + 1);  // 5
  EXPECT_EQ(p.ow(), (13 + 4 - 4 - 1) / 1 + 1);      // 13
  EXPECT_EQ(p.src_numel(), 2 * 4 * 11 * 13);
  EXPECT_EQ(p.dst_numel(), 2 * 6 * 5 * 13);
  EXPECT_EQ(p.wei_numel(), 6 * 4 * 3 * 5);
}

TEST(ConvProblem, FlopsAreTwicePerMultiplyAdd) {
  // VGG16 conv3_x: 1.85 GMAC = 3.7 GFLOP (the issue's figure).
  const ConvProblem p = parse_conv_problem("mb1ic256ih56oc256kh3ph1");
  EXPECT_DOUBLE_EQ(p.macs(), 256.0 * 256 * 9 * 56 * 56);
  EXPECT_DOUBLE_EQ(p.flops(), 2 * p.macs());
  // Groups divide the reduction: depthwise 3x3 is 9 MACs per output.
  const ConvProblem d = parse_conv_problem("g32mb2ic32ih112oc32kh3ph1");
  EXPECT_DOUBLE_EQ(d.macs(), 2.0 * 32 * 112 * 112 * 9);
}

TEST(ConvProblem, StringsRoundTrip) {
  for (const char* s :
       {"mb1ic64ih56oc64kh3ph1", "g32mb1ic32ih112oc32kh3ph1", "mb8ic3ih224oc64kh7sh2ph3",
        "mb1ic4ih11iw13oc6kh3kw5sh2sw1ph1pw2dh2dw1", "mb1ic4ih9oc4kh3sw2", "mb1ic4ih9oc4kh3pw1",
        "mb1ic4ih9oc4kh3dw2", "mb1ic2ih5oc3kh1sh2sw3pw1dh3dw1", "g2mb3ic8ih10iw7oc6kh3kw1"}) {
    const ConvProblem p = parse_conv_problem(s);
    EXPECT_EQ(p.str(), s);
    const ConvProblem q = parse_conv_problem(p.str());
    EXPECT_EQ(q.str(), p.str());
    EXPECT_EQ(q.g, p.g);
    EXPECT_EQ(q.mb, p.mb);
    EXPECT_EQ(q.iw, p.iw);
    EXPECT_EQ(q.kw, p.kw);
    EXPECT_EQ(q.sw, p.sw);
    EXPECT_EQ(q.pw, p.pw);
    EXPECT_EQ(q.dw, p.dw);
  }
  // Non-canonical spellings (any order, defaults written out, a layer name, benchdnn's oh/ow)
  // parse to the canonical problem.
  EXPECT_EQ(parse_conv_problem("oc64ic64kh3ih56ph1mb1").str(), "mb1ic64ih56oc64kh3ph1");
  EXPECT_EQ(parse_conv_problem("g1mb1ic64ih56iw56oc64kh3kw3sh1sw1ph1pw1dh1dw1").str(),
            "mb1ic64ih56oc64kh3ph1");
  EXPECT_EQ(parse_conv_problem("conv1:mb1ic3ih224oc64kh7sh2ph3").str(), "mb1ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(parse_conv_problem("res2a_branch1_mb1ic64ih56oc256kh1").str(), "mb1ic64ih56oc256kh1");
  EXPECT_EQ(parse_conv_problem("  mb1ic3ih224oc64oh112ow112kh7sh2ph3 ").str(),
            "mb1ic3ih224oc64kh7sh2ph3");
  // Width terms are written whenever they differ from the height term, defaults or not.
  ConvProblem p = parse_conv_problem("mb1ic4ih9oc4kh3sh2ph1");
  p.sw = 1;
  p.pw = 0;
  EXPECT_EQ(p.str(), "mb1ic4ih9oc4kh3sh2sw1ph1pw0");
  EXPECT_EQ(parse_conv_problem(p.str()).sw, 1);
  EXPECT_EQ(parse_conv_problem(p.str()).pw, 0);
}

// Every failure: UsageError, the descriptor quoted, the problem named, the valid terms listed.
void expect_usage_error(const std::string& text, const std::string& problem) {
  try {
    parse_conv_problem(text);
    FAIL() << "'" << text << "' parsed; expected an error about " << problem;
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + text + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    EXPECT_NE(msg.find("valid terms: g, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, dh, dw"),
              std::string::npos)
        << msg;
  }
}

TEST(ConvProblem, BadDescriptorsSayWhatIsWrong) {
  expect_usage_error("mb1ic64ih56oc64kh3px1", "unknown term 'px'");
  expect_usage_error("mb1ic64ih56oc64kh3ph1q", "unknown term 'q'");
  expect_usage_error("mb1icih56oc64kh3", "term 'ic' has no number");
  expect_usage_error("mb1ic64ih56oc64kh3ph", "term 'ph' has no number");
  expect_usage_error("mb1ic64ih56oc64kh3ph-1", "term 'ph' has no number");
  expect_usage_error("mb1ic64ih56oc64kh3 ph1", "expected a term name at ' ph1'");
  expect_usage_error("123", "expected a term name at '123'");
  expect_usage_error("", "no terms");
  expect_usage_error("conv1:", "no terms");
  expect_usage_error("mb1ic64ic32ih56oc64kh3", "term 'ic' given twice");
  expect_usage_error("mb1ih56oc64kh3", "missing term 'ic'");
  expect_usage_error("mb1ic64oc64kh3", "missing term 'ih'");
  expect_usage_error("mb1ic64ih56kh3", "missing term 'oc'");
  expect_usage_error("mb1ic64ih56oc64", "missing term 'kh'");
  expect_usage_error("g3mb1ic64ih56oc63kh3", "ic64 is not divisible by g3");
  expect_usage_error("g4mb1ic64ih56oc62kh3", "oc62 is not divisible by g4");
  expect_usage_error("mb1ic3ih5oc8kh7",
                     "kernel height 7 (kh7 dh1) is larger than the padded input height 5");
  expect_usage_error("mb1ic3ih8iw4oc8kh3dw2",
                     "kernel width 5 (kw3 dw2) is larger than the padded input width 4");
  expect_usage_error("mb0ic3ih8oc8kh3", "mb must be at least 1 (got 0)");
  expect_usage_error("mb1ic0ih8oc8kh3", "ic must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih0oc8kh1", "ih must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih8oc0kh3", "oc must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih8oc8kh0", "kh must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih8oc8kh3sh0", "sh must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih8oc8kh3dh0", "dh must be at least 1 (got 0)");
  expect_usage_error("g0mb1ic3ih8oc8kh3", "g must be at least 1 (got 0)");
  expect_usage_error("mb1ic3ih8oc8kh3ih99999999999", "term 'ih' given twice");
  expect_usage_error("mb1ic99999999999ih8oc8kh3",
                     "term 'ic' is too large: 99999999999 (at most 16777216)");
  expect_usage_error("mb1ic3ih224oc64oh111kh7sh2ph3",
                     "oh111 does not match the computed output height 112");
  expect_usage_error("mb1ic3ih224oc64ow1kh7sh2ph3",
                     "ow1 does not match the computed output width 112");
}

TEST(ConvProblem, InvalidReasonOnHandBuiltProblems) {
  ConvProblem p;
  EXPECT_NE(p.invalid_reason(), "");  // all sizes zero
  p.ic = 4;
  p.ih = p.iw = 5;
  p.oc = 6;
  p.kh = p.kw = 3;
  EXPECT_EQ(p.invalid_reason(), "");
  p.ph = -1;
  EXPECT_NE(p.invalid_reason().find("padding must be non-negative"), std::string::npos);
  p.ph = 0;
  p.g = 4;
  EXPECT_EQ(p.invalid_reason(), "oc6 is not divisible by g4");
  p.g = 2;
  EXPECT_EQ(p.invalid_reason(), "");
  p.kw = 6;
  EXPECT_NE(p.invalid_reason().find("kernel width 6"), std::string::npos);
  p.pw = 1;  // padded width 7 now holds it
  EXPECT_EQ(p.invalid_reason(), "");
}

// Hostile text: every term is capped at 2^24 whatever its number of digits, products that would
// overflow are refused, and nothing but a UsageError ever comes out.
TEST(ConvProblem, HostileNumbersAreRefusedByName) {
  ASSERT_EQ(kConvMaxTerm, 16777216);
  // The cap itself is accepted; one more is refused, naming the term and the cap.
  EXPECT_EQ(parse_conv_problem("mb1ic1ih16777216iw1oc1kh1").ih, 16777216);
  expect_usage_error("mb1ic1ih16777217iw1oc1kh1",
                     "term 'ih' is too large: 16777217 (at most 16777216)");
  // Far beyond int64 (2^63 is 19 digits): read to the end, no wrap-around to a small value.
  expect_usage_error("mb1ic3ih8oc8kh3ph18446744073709551617",
                     "term 'ph' is too large: 18446744073709551617");
  expect_usage_error("mb1ic3ih8oc8kh3sh99999999999999999999999999999999",
                     "term 'sh' is too large");
  expect_usage_error("g99999999999999999999mb1ic3ih8oc8kh3", "term 'g' is too large");
  // Leading zeros are a number like any other.
  EXPECT_EQ(parse_conv_problem("mb0001ic0003ih008oc8kh3").ic, 3);
  // Each term fits but the tensors together would not: refused before any product overflows.
  expect_usage_error("mb16777216ic16777216ih16777216oc1kh1",
                     "tensors are too large (more than 1e12 elements)");
  expect_usage_error("mb1ic16777216ih16777216oc16777216kh1", "tensors are too large");
  expect_usage_error("mb1ic16777216ih1oc16777216kh1", "tensors are too large");  // weights
  // Huge dilation or kernel against a small input.
  expect_usage_error("mb1ic1ih8oc1kh3dh16777216", "kernel height 33554433");
}

TEST(ConvProblem, HostileTextIsRefusedByName) {
  expect_usage_error("   ", "no terms");
  expect_usage_error("mb1ic3ih8oc8kh3mb2", "term 'mb' given twice");
  expect_usage_error("mb1ic3ih8oc8kh3oh6oh6", "term 'oh' given twice");
  expect_usage_error("mb1ic3ih8oc8kh3!", "expected a term name at '!'");
  expect_usage_error("mb1ic3ih8oc8kh3_", "no terms");  // a layer name and nothing after it
  expect_usage_error("mb1ic3ih8oc8kh3x", "unknown term 'x'");
  expect_usage_error("mb1ic3ih8oc8kh3.5", "expected a term name at '.5'");
  expect_usage_error("mb1ic3ih8oc8kh+3", "term 'kh' has no number");
  expect_usage_error("MB1IC3IH8OC8KH3", "unknown term 'MB'");

  // Control and non-ASCII bytes are escaped, so the message stays one printable line.
  const std::string nasty = "mb1ic3\nih8oc8kh3\x1b[31m\xff";
  try {
    parse_conv_problem(nasty);
    FAIL() << "parsed a descriptor with a newline";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    EXPECT_NE(msg.find(R"('mb1ic3\x0aih8oc8kh3\x1b[31m\xff')"), std::string::npos) << msg;
  }
  // A megabyte of text gives a short message that still says how long the text was.
  const std::string huge = "mb1ic3ih8oc8kh3" + std::string(1 << 20, 'q');
  try {
    parse_conv_problem(huge);
    FAIL() << "parsed a megabyte of text";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_LT(msg.size(), 1000u) << msg.substr(0, 2000);
    EXPECT_NE(msg.find("... (1048591 bytes)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unknown term 'qqq"), std::string::npos) << msg;
  }
  // A very long layer name before the terms is fine.
  EXPECT_EQ(parse_conv_problem(std::string(5000, 'n') + "_mb1ic3ih8oc8kh3").str(),
            "mb1ic3ih8oc8kh3");
}

TEST(ConvProblem, MinBytesIsInputPlusWeightsPlusOutputInFloat32) {
  // src 2*3*5*5 = 150, wei 4*3*3*3 = 108, dst 2*4*3*3 = 72 floats.
  EXPECT_EQ(conv_problem_min_bytes(parse_conv_problem("mb2ic3ih5oc4kh3")), (150 + 108 + 72) * 4);
  // Groups shrink the weights: depthwise 32 x 1 x 3 x 3.
  const ConvProblem dw = parse_conv_problem("g32mb1ic32ih112oc32kh3ph1");
  EXPECT_EQ(conv_problem_min_bytes(dw), (32 * 112 * 112 + 32 * 9 + 32 * 112 * 112) * 4);
  // The issue's example: 1x4096x1024x1024 in and out (16 GiB each) plus 4096x4096 weights
  // (64 MiB): 32.06 GiB, well past int32 and any test machine's memory.
  const ConvProblem big = parse_conv_problem("mb1ic4096ih1024oc4096kh1");
  EXPECT_EQ(big.src_numel(), int64_t{4096} * 1024 * 1024);
  EXPECT_EQ(conv_problem_min_bytes(big), int64_t{34426847232});
  EXPECT_EQ(conv_problem_min_bytes(big), (int64_t{32} << 30) + (int64_t{64} << 20));
  // The largest descriptors the parser accepts stay far below INT64_MAX.
  const ConvProblem widest = parse_conv_problem("mb59604ic16777216ih1oc1kh1");
  EXPECT_LT(conv_problem_min_bytes(widest), int64_t{1} << 45);
}

TEST(ConvProblem, MinBytesSaturatesOnOverflowAndMalformedProblems) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ConvProblem p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.mb = p.ic = p.ih = p.iw = int64_t{1} << 20;  // 2^80 input elements
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
  p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.ih = kMax;  // ih + 2*ph alone would overflow
  p.ph = kMax;
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
  p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.kh = std::numeric_limits<int64_t>::min();  // kh - 1 overflows
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
  p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.sh = 0;  // no output size: refused, not a division by zero
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
  p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.g = 0;
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
  p = parse_conv_problem("mb1ic4ih8oc4kh3");
  p.mb = -1;
  EXPECT_EQ(conv_problem_min_bytes(p), kMax);
}

}  // namespace
}  // namespace nnperf
