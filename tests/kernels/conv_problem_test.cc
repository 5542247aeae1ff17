// The convolution descriptor: benchdnn strings parse to the right fields and print back the same
// (canonical strings round-trip both ways), FLOP/MAC counts and output sizes, and every kind of
// bad descriptor fails with a UsageError naming the descriptor, the problem and the valid terms.
#include <gtest/gtest.h>

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
  expect_usage_error("mb1ic99999999999ih8oc8kh3", "'ic' is too large");
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

}  // namespace
}  // namespace nnperf
