// The convolution problem descriptor: benchdnn-style strings both ways ("mb1ic64ih56oc64kh3ph1"),
// FLOP/MAC counts (2 FLOPs per multiply-add) and validation. The same string names a layer in
// logs, CSVs, test failures and repro lines, so parse(str(p)) == p for every valid problem.
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {

namespace {

constexpr const char* kValidTerms =
    "g, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, dh, dw (plus oh, ow as checks); "
    "e.g. mb1ic64ih56oc64kh3ph1 or g32mb1ic32ih112oc32kh3ph1";

// Every term is at most 2^24 (16777216): far beyond any real layer (ImageNet is 224, the widest
// channel counts are a few thousand), and small enough that no sum or product of two terms, nor
// oh()/ow(), can overflow int64. Larger values are typos or hostile input.
constexpr int64_t kMaxTerm = kConvMaxTerm;

// Descriptors are quoted in messages through quote_input (core/error.h).
std::string quoted(std::string_view text) { return quote_input(text); }

struct Term {
  std::string_view name;
  int64_t ConvProblem::*field;  // null for oh / ow (checked, not stored)
};
constexpr std::array<Term, 16> kTerms = {{
    {"g", &ConvProblem::g},
    {"mb", &ConvProblem::mb},
    {"ic", &ConvProblem::ic},
    {"ih", &ConvProblem::ih},
    {"iw", &ConvProblem::iw},
    {"oc", &ConvProblem::oc},
    {"oh", nullptr},
    {"ow", nullptr},
    {"kh", &ConvProblem::kh},
    {"kw", &ConvProblem::kw},
    {"sh", &ConvProblem::sh},
    {"sw", &ConvProblem::sw},
    {"ph", &ConvProblem::ph},
    {"pw", &ConvProblem::pw},
    {"dh", &ConvProblem::dh},
    {"dw", &ConvProblem::dw},
}};

}  // namespace

double ConvProblem::macs() const {
  return static_cast<double>(mb) * static_cast<double>(oc) * static_cast<double>(oh()) *
         static_cast<double>(ow()) * static_cast<double>(icg()) * static_cast<double>(kh) *
         static_cast<double>(kw);
}

double ConvProblem::flops() const { return 2.0 * macs(); }

std::string ConvProblem::str() const {
  std::string s;
  if (g != 1) s += fmt::format("g{}", g);
  s += fmt::format("mb{}ic{}ih{}", mb, ic, ih);
  if (iw != ih) s += fmt::format("iw{}", iw);
  s += fmt::format("oc{}kh{}", oc, kh);
  if (kw != kh) s += fmt::format("kw{}", kw);
  // A width term is written when it differs from its height term (which the parser copies);
  // a height term when it differs from its default.
  if (sh != 1) s += fmt::format("sh{}", sh);
  if (sw != sh) s += fmt::format("sw{}", sw);
  if (ph != 0) s += fmt::format("ph{}", ph);
  if (pw != ph) s += fmt::format("pw{}", pw);
  if (dh != 1) s += fmt::format("dh{}", dh);
  if (dw != dh) s += fmt::format("dw{}", dw);
  return s;
}

std::string ConvProblem::invalid_reason() const {
  const std::pair<const char*, int64_t> positive[] = {
      {"g", g},   {"mb", mb}, {"ic", ic}, {"ih", ih}, {"iw", iw}, {"oc", oc},
      {"kh", kh}, {"kw", kw}, {"sh", sh}, {"sw", sw}, {"dh", dh}, {"dw", dw}};
  for (const auto& [name, value] : positive) {
    if (value < 1) return fmt::format("{} must be at least 1 (got {})", name, value);
    if (value > kMaxTerm) return fmt::format("{}{} is too large (max {})", name, value, kMaxTerm);
  }
  if (ph < 0 || pw < 0) return fmt::format("padding must be non-negative (ph{} pw{})", ph, pw);
  if (ph > kMaxTerm || pw > kMaxTerm) return fmt::format("padding ph{} pw{} is too large", ph, pw);
  if (ic % g != 0) return fmt::format("ic{} is not divisible by g{}", ic, g);
  if (oc % g != 0) return fmt::format("oc{} is not divisible by g{}", oc, g);
  const int64_t ext_h = dh * (kh - 1) + 1, ext_w = dw * (kw - 1) + 1;
  if (ext_h > ih + 2 * ph) {
    return fmt::format("kernel height {} (kh{} dh{}) is larger than the padded input height {}",
                       ext_h, kh, dh, ih + 2 * ph);
  }
  if (ext_w > iw + 2 * pw) {
    return fmt::format("kernel width {} (kw{} dw{}) is larger than the padded input width {}",
                       ext_w, kw, dw, iw + 2 * pw);
  }
  // Every buffer must be indexable with int64 and small enough to allocate at all.
  constexpr double kMaxElements = 1e12;
  if (static_cast<double>(mb) * ic * ih * iw > kMaxElements ||
      static_cast<double>(mb) * oc * oh() * ow() > kMaxElements ||
      static_cast<double>(oc) * icg() * kh * kw > kMaxElements) {
    return "tensors are too large (more than 1e12 elements)";
  }
  return "";
}

namespace {

UsageError descriptor_error(std::string_view text, const std::string& problem) {
  return UsageError(fmt::format("convolution descriptor '{}': {}; valid terms: {}", quoted(text),
                                problem, kValidTerms));
}

// The terms of a descriptor: spaces trimmed, and an optional layer name before them (everything
// up to the last ':' or '_') dropped.
std::string_view descriptor_terms(std::string_view text) {
  std::string_view body = text;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) {
    body.remove_prefix(1);
  }
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) {
    body.remove_suffix(1);
  }
  const std::size_t cut = body.find_last_of(":_");
  if (cut != std::string_view::npos) body.remove_prefix(cut + 1);
  return body;
}

// The index in kTerms of the term name at body[i..] (i moved past it).
std::size_t read_term_name(std::string_view text, std::string_view body, std::size_t& i) {
  const std::size_t name_start = i;
  while (i < body.size() && std::isalpha(static_cast<unsigned char>(body[i]))) ++i;
  const std::string_view name = body.substr(name_start, i - name_start);
  if (name.empty()) {
    throw descriptor_error(
        text, fmt::format("expected a term name at '{}'", quoted(body.substr(name_start))));
  }
  std::size_t t = 0;
  while (t < kTerms.size() && kTerms[t].name != name) ++t;
  if (t < kTerms.size()) return t;
  // "icih56": a term followed by another term's letters lacks its number.
  for (std::size_t len : {2, 1}) {
    for (const Term& term : kTerms) {
      if (name.size() > len && name.substr(0, len) == term.name) {
        throw descriptor_error(text, fmt::format("term '{}' has no number", term.name));
      }
    }
  }
  throw descriptor_error(text, fmt::format("unknown term '{}'", quoted(name)));
}

// The number of term `name` at body[i..] (i moved past every digit), at most kMaxTerm.
int64_t read_term_value(std::string_view text, std::string_view body, std::size_t& i,
                        std::string_view name) {
  const std::size_t digits_start = i;
  int64_t value = 0;
  bool too_large = false;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) {
    // Stops accumulating past the cap (so never overflows) but reads every digit.
    if (!too_large) value = value * 10 + (body[i] - '0');
    too_large = too_large || value > kMaxTerm;
    ++i;
  }
  if (i == digits_start) throw descriptor_error(text, fmt::format("term '{}' has no number", name));
  if (too_large) {
    throw descriptor_error(text, fmt::format("term '{}' is too large: {} (at most {})", name,
                                             quoted(body.substr(digits_start, i - digits_start)),
                                             kMaxTerm));
  }
  return value;
}

}  // namespace

ConvProblem parse_conv_problem(std::string_view text) {
  const std::string_view body = descriptor_terms(text);
  if (body.empty()) throw descriptor_error(text, "no terms");
  ConvProblem p;
  bool seen[kTerms.size()] = {};
  int64_t given_oh = -1, given_ow = -1;
  for (std::size_t i = 0; i < body.size();) {
    const std::size_t t = read_term_name(text, body, i);
    const std::string_view name = kTerms[t].name;
    if (seen[t]) throw descriptor_error(text, fmt::format("term '{}' given twice", name));
    seen[t] = true;
    const int64_t value = read_term_value(text, body, i, name);
    if (kTerms[t].field != nullptr) {
      p.*kTerms[t].field = value;
    } else if (name == "oh") {
      given_oh = value;
    } else {
      given_ow = value;
    }
  }
  auto given = [&](std::string_view name) {
    for (std::size_t t = 0; t < kTerms.size(); ++t) {
      if (kTerms[t].name == name) return seen[t];
    }
    return false;
  };
  for (const char* required : {"ic", "ih", "oc", "kh"}) {
    if (!given(required)) throw descriptor_error(text, fmt::format("missing term '{}'", required));
  }
  if (!given("iw")) p.iw = p.ih;
  if (!given("kw")) p.kw = p.kh;
  if (!given("sw")) p.sw = p.sh;
  if (!given("pw")) p.pw = p.ph;
  if (!given("dw")) p.dw = p.dh;
  const std::string reason = p.invalid_reason();
  if (!reason.empty()) throw descriptor_error(text, reason);
  if (given_oh >= 0 && given_oh != p.oh()) {
    throw descriptor_error(
        text, fmt::format("oh{} does not match the computed output height {}", given_oh, p.oh()));
  }
  if (given_ow >= 0 && given_ow != p.ow()) {
    throw descriptor_error(
        text, fmt::format("ow{} does not match the computed output width {}", given_ow, p.ow()));
  }
  return p;
}

}  // namespace nnperf

namespace nnperf {

namespace {

// int64 arithmetic that records an overflow instead of wrapping (hand-built problems may hold
// any values).
struct Checked {
  bool overflow = false;
  int64_t add(int64_t a, int64_t b) { return apply(__builtin_add_overflow(a, b, &r_)); }
  int64_t sub(int64_t a, int64_t b) { return apply(__builtin_sub_overflow(a, b, &r_)); }
  int64_t mul(int64_t a, int64_t b) { return apply(__builtin_mul_overflow(a, b, &r_)); }

 private:
  int64_t apply(bool o) {
    overflow = overflow || o;
    return o ? 0 : r_;
  }
  int64_t r_ = 0;
};

}  // namespace

int64_t conv_problem_min_bytes(const ConvProblem& p) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (p.g < 1 || p.sh < 1 || p.sw < 1) return kMax;  // no output size without them
  Checked c;
  // oh = (ih + 2*ph - dh*(kh-1) - 1) / sh + 1, likewise ow.
  const int64_t oh =
      c.add(c.sub(c.sub(c.add(p.ih, c.mul(2, p.ph)), c.mul(p.dh, c.sub(p.kh, 1))), 1) / p.sh, 1);
  const int64_t ow =
      c.add(c.sub(c.sub(c.add(p.iw, c.mul(2, p.pw)), c.mul(p.dw, c.sub(p.kw, 1))), 1) / p.sw, 1);
  for (int64_t v : {p.mb, p.ic, p.ih, p.iw, p.oc, p.kh, p.kw, oh, ow}) {
    if (v < 0) return kMax;  // malformed: no size to allocate
  }
  const int64_t src = c.mul(c.mul(c.mul(p.mb, p.ic), p.ih), p.iw);
  const int64_t wei = c.mul(c.mul(c.mul(p.oc, p.ic / p.g), p.kh), p.kw);
  const int64_t dst = c.mul(c.mul(c.mul(p.mb, p.oc), oh), ow);
  const int64_t bytes =
      c.mul(c.add(c.add(src, wei), dst), static_cast<int64_t>(sizeof(float)));
  return c.overflow ? kMax : bytes;
}

}  // namespace nnperf
