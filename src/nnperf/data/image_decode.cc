// Image decoding through libjpeg's and libpng's C APIs. Both report errors by longjmp: every
// setjmp sits in a small phase function whose frame (and every frame a longjmp can cross) holds
// no C++ object with a destructor; the decoder state lives in a struct owned by a guard in the
// caller, which destroys the library's objects on every path, then throws nnperf::Error. Neither
// library may print: libjpeg's output_message and libpng's warning function are silent.
#include "nnperf/data/image_decode.h"

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on
#include <fmt/format.h>
#include <png.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

// A progressive JPEG is decoded in one pass per scan; real files have about 10. A crafted one can
// hold thousands of tiny scans and take minutes (libjpeg-turbo's own fuzzers stop at 500 too).
constexpr int kMaxJpegScans = 500;
// Deflate cannot expand more than 1032:1, so a PNG of N bytes holds at most ~N * 1032 bytes of
// filtered rows: a header claiming more is a lie found before allocating.
constexpr int64_t kMaxDeflateRatio = 1032;
constexpr int64_t kInflateSlack = 4096;
constexpr std::size_t kReasonSize = 512;

std::string signature_hex(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < 8; ++i) {
    out += fmt::format("{}{:02x}", i == 0 ? "" : " ", static_cast<unsigned char>(bytes[i]));
  }
  return out.empty() ? "nothing (an empty file)" : out;
}

void check_dimensions(const std::string& name, const char* kind, int64_t w, int64_t h,
                      const ImageLimits& limits) {
  if (w < 1 || h < 1)
    fail("{}: {} header claims {}x{} pixels (expected at least 1x1)", name, kind, w, h);
  if (w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels) {
    fail(
        "{}: {} header claims {}x{} pixels, over the limit of {} per side and {} pixels in all; "
        "refused before decoding",
        name, kind, w, h, limits.max_side, limits.max_pixels);
  }
}

void check_rgb_memory(const std::string& name, int64_t w, int64_t h) {
  check_memory(w * h * 3, fmt::format("{} ({}x{} RGB pixels)", name, w, h));
}

// ---- JPEG ----

struct JpegState {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  bool created = false;
  char reason[kReasonSize] = {};
};

JpegState* jpeg_state(j_common_ptr c) {
  // err is the second member's address; the state is found from the client_data pointer.
  return static_cast<JpegState*>(c->client_data);
}

[[noreturn]] void jpeg_on_error(j_common_ptr c) {
  JpegState* s = jpeg_state(c);
  char text[JMSG_LENGTH_MAX];
  c->err->format_message(c, text);
  std::snprintf(s->reason, sizeof s->reason, "%s", text);
  std::longjmp(s->jump, 1);
}

// Warnings (level -1) that mean pixels were lost or invented are errors; the harmless ones
// (bytes between markers, an unknown JFIF revision or Adobe transform, a bad ICC marker) are
// accepted silently. Trace messages (level >= 0) are ignored.
void jpeg_on_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  const int code = c->err->msg_code;
  if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM ||
      code == JWRN_BOGUS_ICC) {
    c->err->num_warnings++;
    return;
  }
  jpeg_on_error(c);
}

void jpeg_silent(j_common_ptr) {}

void jpeg_on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxJpegScans) {
    JpegState* s = jpeg_state(c);
    std::snprintf(s->reason, sizeof s->reason, "more than %d scans (a crafted progressive JPEG?)",
                  kMaxJpegScans);
    std::longjmp(s->jump, 1);
  }
}

// Phase 1: the header. Returns false with s->reason set on an error.
bool jpeg_header_phase(JpegState* s, const unsigned char* data, unsigned long size,
                       long max_memory) {
  s->cinfo.err = jpeg_std_error(&s->err);
  s->err.error_exit = jpeg_on_error;
  s->err.emit_message = jpeg_on_message;
  s->err.output_message = jpeg_silent;
  s->cinfo.client_data = s;
  if (setjmp(s->jump) != 0) return false;
  jpeg_create_decompress(&s->cinfo);
  s->created = true;
  // Whole-image buffers (progressive coefficients) beyond this fail instead of growing.
  s->cinfo.mem->max_memory_to_use = max_memory;
  s->progress.progress_monitor = jpeg_on_progress;
  s->cinfo.progress = &s->progress;
  jpeg_mem_src(&s->cinfo, data, size);
  jpeg_read_header(&s->cinfo, TRUE);
  const bool cmyk = s->cinfo.jpeg_color_space == JCS_CMYK || s->cinfo.jpeg_color_space == JCS_YCCK;
  s->cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  return true;
}

// Phase 2: the pixels into out (w x h x 3), CMYK rows through `row4` (w x 4 bytes).
bool jpeg_pixels_phase(JpegState* s, unsigned char* out, unsigned char* row4) {
  if (setjmp(s->jump) != 0) return false;
  jpeg_start_decompress(&s->cinfo);
  const JDIMENSION w = s->cinfo.output_width;
  const bool cmyk = s->cinfo.out_color_space == JCS_CMYK;
  if (s->cinfo.output_components != (cmyk ? 4 : 3)) {
    std::snprintf(s->reason, sizeof s->reason, "unexpected %d output components",
                  s->cinfo.output_components);
    return false;
  }
  // Adobe's CMYK JPEGs store inverted values (Photoshop's convention); others store plain ink.
  const bool inverted = s->cinfo.saw_Adobe_marker;
  while (s->cinfo.output_scanline < s->cinfo.output_height) {
    unsigned char* dst = out + static_cast<std::size_t>(s->cinfo.output_scanline) * w * 3;
    JSAMPROW row = cmyk ? row4 : dst;
    if (jpeg_read_scanlines(&s->cinfo, &row, 1) != 1) {
      std::snprintf(s->reason, sizeof s->reason, "no scanline decoded");
      return false;
    }
    if (cmyk) {
      for (JDIMENSION x = 0; x < w; ++x) {
        const unsigned char* p = row4 + 4 * x;
        const unsigned k = inverted ? p[3] : 255u - p[3];
        for (int c = 0; c < 3; ++c) {
          const unsigned v = inverted ? p[c] : 255u - p[c];
          dst[3 * x + c] = static_cast<unsigned char>((v * k + 127) / 255);
        }
      }
    }
  }
  // jpeg_finish_decompress is not called: every pixel is in; a missing EOI marker after them
  // does not matter (libjpeg would warn) and jpeg_destroy_decompress frees everything.
  return true;
}

struct JpegGuard {
  JpegState* s;
  ~JpegGuard() {
    if (s->created) jpeg_destroy_decompress(&s->cinfo);
  }
};

Image decode_jpeg(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  auto state = std::make_unique<JpegState>();
  JpegGuard guard{state.get()};
  const int64_t budget = std::clamp<int64_t>(available_memory_bytes(), 1 << 20, LONG_MAX);
  if (!jpeg_header_phase(state.get(), reinterpret_cast<const unsigned char*>(bytes.data()),
                         static_cast<unsigned long>(bytes.size()), static_cast<long>(budget))) {
    fail("{}: corrupt or unsupported JPEG: {}", name, state->reason);
  }
  const int64_t w = state->cinfo.image_width, h = state->cinfo.image_height;
  check_dimensions(name, "JPEG", w, h, limits);
  check_rgb_memory(name, w, h);
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<std::size_t>(w * h * 3));
  std::vector<unsigned char> row4(static_cast<std::size_t>(w * 4));
  if (!jpeg_pixels_phase(state.get(), img.rgb.data(), row4.data())) {
    fail("{}: corrupt or unsupported JPEG: {}", name, state->reason);
  }
  if (static_cast<int64_t>(state->cinfo.output_width) != w ||
      static_cast<int64_t>(state->cinfo.output_height) != h) {
    fail("{}: JPEG decoded to {}x{} pixels, its header said {}x{}", name, state->cinfo.output_width,
         state->cinfo.output_height, w, h);
  }
  return img;
}

// ---- PNG ----

struct PngState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const unsigned char* data = nullptr;
  std::size_t size = 0, pos = 0;
  char reason[kReasonSize] = {};
};

void png_on_read(png_structp png, png_bytep dst, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->size - s->pos) png_error(png, "unexpected end of data (the file is cut short)");
  std::memcpy(dst, s->data + s->pos, n);
  s->pos += n;
}

[[noreturn]] void png_on_error(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->reason, sizeof s->reason, "%s", msg);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}  // benign (a bad ancillary chunk): silent

struct PngHeader {
  png_uint_32 width = 0, height = 0;
  png_size_t file_rowbytes = 0;
};

// Phase 1: signature and header (libpng allocates nothing sized by them yet).
bool png_header_phase(PngState* s, PngHeader* hdr) {
  s->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, png_on_error, png_on_warning);
  if (s->png == nullptr) {
    std::snprintf(s->reason, sizeof s->reason, "cannot create a libpng reader");
    return false;
  }
  s->info = png_create_info_struct(s->png);
  if (s->info == nullptr) {
    std::snprintf(s->reason, sizeof s->reason, "cannot create a libpng info struct");
    return false;
  }
  if (setjmp(png_jmpbuf(s->png)) != 0) return false;
  png_set_read_fn(s->png, s, png_on_read);
  // Our own caps (check_dimensions) apply after the header; libpng's default 1,000,000 per side
  // would refuse first with a less helpful message.
  png_set_user_limits(s->png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_read_info(s->png, s->info);
  hdr->width = png_get_image_width(s->png, s->info);
  hdr->height = png_get_image_height(s->png, s->info);
  hdr->file_rowbytes = png_get_rowbytes(s->png, s->info);
  return true;
}

// Phase 2, once the header's sizes passed our checks: the transforms to 8-bit RGB
// (png_read_update_info allocates libpng's row buffers, a row or two of the image).
bool png_transform_phase(PngState* s, const PngHeader& hdr) {
  if (setjmp(png_jmpbuf(s->png)) != 0) return false;
  const int color = png_get_color_type(s->png, s->info);
  const int depth = png_get_bit_depth(s->png, s->info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(s->png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(s->png);
  if (depth == 16) png_set_scale_16(s->png);  // (v * 255 + 32895) >> 16: v / 257 rounded
  png_set_strip_alpha(s->png);                // also the alpha a palette's tRNS expands to
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(s->png);
  }
  png_set_interlace_handling(s->png);
  png_read_update_info(s->png, s->info);
  if (png_get_channels(s->png, s->info) != 3 || png_get_bit_depth(s->png, s->info) != 8 ||
      png_get_rowbytes(s->png, s->info) != static_cast<png_size_t>(hdr.width) * 3) {
    std::snprintf(s->reason, sizeof s->reason,
                  "transforms gave %d channels of %d bits (expected 3 of 8)",
                  png_get_channels(s->png, s->info), png_get_bit_depth(s->png, s->info));
    return false;
  }
  return true;
}

// Phase 3: the rows (pointers into the caller's buffer).
bool png_pixels_phase(PngState* s, png_bytepp rows) {
  if (setjmp(png_jmpbuf(s->png)) != 0) return false;
  png_read_image(s->png, rows);
  // png_read_end is not called: chunks after the pixels (text, time) do not change them.
  return true;
}

struct PngGuard {
  PngState* s;
  ~PngGuard() {
    if (s->png != nullptr) png_destroy_read_struct(&s->png, &s->info, nullptr);
  }
};

Image decode_png(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  auto state = std::make_unique<PngState>();
  PngGuard guard{state.get()};
  state->data = reinterpret_cast<const unsigned char*>(bytes.data());
  state->size = bytes.size();
  PngHeader hdr;
  if (!png_header_phase(state.get(), &hdr)) {
    fail("{}: corrupt or unsupported PNG: {}", name, state->reason);
  }
  const int64_t w = hdr.width, h = hdr.height;
  check_dimensions(name, "PNG", w, h, limits);
  const int64_t raw = (static_cast<int64_t>(hdr.file_rowbytes) + 1) * h;  // + filter byte per row
  const int64_t most = static_cast<int64_t>(bytes.size()) * kMaxDeflateRatio + kInflateSlack;
  if (raw > most) {
    fail(
        "{}: PNG header claims {}x{} pixels ({} bytes of rows) but the file holds only {} bytes "
        "(deflate expands at most {}:1): cut short or forged",
        name, w, h, raw, bytes.size(), kMaxDeflateRatio);
  }
  check_rgb_memory(name, w, h);
  if (!png_transform_phase(state.get(), hdr)) {
    fail("{}: corrupt or unsupported PNG: {}", name, state->reason);
  }
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<std::size_t>(w * h * 3));
  std::vector<png_bytep> rows(static_cast<std::size_t>(h));
  for (int64_t y = 0; y < h; ++y) rows[static_cast<std::size_t>(y)] = img.rgb.data() + y * w * 3;
  if (!png_pixels_phase(state.get(), rows.data())) {
    fail("{}: corrupt or unsupported PNG: {}", name, state->reason);
  }
  return img;
}

// ---- resize ----

// The taps of one output pixel on one axis: input pixels [first, first + weights.size()).
struct Taps {
  int64_t first = 0;
  std::vector<float> weights;
};

// Taps for output pixels [begin, begin + count) of an axis resized from in_size to out_size.
std::vector<Taps> axis_taps(int64_t in_size, int64_t out_size, int64_t begin, int64_t count) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double support = std::max(scale, 1.0);  // the triangle's radius in input pixels
  std::vector<Taps> taps(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const double centre = (static_cast<double>(begin + i) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(0, static_cast<int64_t>(std::floor(centre - support)));
    const int64_t hi =
        std::min<int64_t>(in_size, static_cast<int64_t>(std::ceil(centre + support)));
    Taps& t = taps[static_cast<std::size_t>(i)];
    std::vector<double> w;
    double sum = 0;
    for (int64_t x = lo; x < hi; ++x) {
      const double v =
          std::max(0.0, 1.0 - std::abs(static_cast<double>(x) + 0.5 - centre) / support);
      w.push_back(v);
      sum += v;
    }
    // Trim zero weights at both ends so the loops below touch only contributing pixels.
    std::size_t a = 0, b = w.size();
    while (a < b && w[a] == 0) ++a;
    while (b > a && w[b - 1] == 0) --b;
    t.first = lo + static_cast<int64_t>(a);
    for (std::size_t k = a; k < b; ++k) t.weights.push_back(static_cast<float>(w[k] / sum));
  }
  return taps;
}

}  // namespace

Image decode_image(std::string_view bytes, const std::string& name, const ImageLimits& limits) {
  static constexpr unsigned char kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) {
    return decode_jpeg(bytes, name, limits);
  }
  if (bytes.size() >= 8 && std::memcmp(b, kPng, 8) == 0) return decode_png(bytes, name, limits);
  fail(
      "{}: not a JPEG or PNG image (it starts with {}; expected ff d8 ff or 89 50 4e 47 0d 0a 1a "
      "0a)",
      name, signature_hex(bytes));
}

Image read_image(const fs::path& path, const ImageLimits& limits) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail("{}: not a regular file", path.string());
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) fail("{}: cannot read its size: {}", path.string(), ec.message());
  check_memory(size, path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path.string());
  std::string bytes(static_cast<std::size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (in.gcount() != static_cast<std::streamsize>(size)) {
    fail("{}: read only {} of {} bytes", path.string(), static_cast<int64_t>(in.gcount()), size);
  }
  return decode_image(bytes, path.string(), limits);
}

ResizeCrop resize_crop_geometry(int64_t width, int64_t height, int resize, int crop) {
  NNPERF_CHECK(width >= 1 && height >= 1 && crop >= 1 && crop <= resize,
               "resize_crop_geometry({}x{}, resize {}, crop {})", width, height, resize, crop);
  ResizeCrop g;
  if (width <= height) {
    g.resized_w = resize;
    g.resized_h = int64_t{resize} * height / width;
  } else {
    g.resized_h = resize;
    g.resized_w = int64_t{resize} * width / height;
  }
  g.left = static_cast<int64_t>(std::nearbyint(static_cast<double>(g.resized_w - crop) / 2.0));
  g.top = static_cast<int64_t>(std::nearbyint(static_cast<double>(g.resized_h - crop) / 2.0));
  return g;
}

void resize_center_crop(const Image& src, int resize, int crop, float* dst) {
  const ResizeCrop g = resize_crop_geometry(src.width, src.height, resize, crop);
  const std::vector<Taps> cols = axis_taps(src.width, g.resized_w, g.left, crop);
  const std::vector<Taps> rows = axis_taps(src.height, g.resized_h, g.top, crop);
  int64_t y0 = src.height, y1 = 0;  // the source rows the crop needs
  for (const Taps& t : rows) {
    y0 = std::min(y0, t.first);
    y1 = std::max(y1, t.first + static_cast<int64_t>(t.weights.size()));
  }
  // Horizontal pass: rows y0..y1 of the source to crop columns (interleaved RGB, scaled to [0,1]).
  std::vector<float> tmp(static_cast<std::size_t>((y1 - y0) * crop * 3));
  for (int64_t y = y0; y < y1; ++y) {
    const uint8_t* s = src.rgb.data() + y * src.width * 3;
    float* t = tmp.data() + (y - y0) * crop * 3;
    for (int64_t c = 0; c < crop; ++c) {
      const Taps& tap = cols[static_cast<std::size_t>(c)];
      float acc[3] = {0, 0, 0};
      for (std::size_t k = 0; k < tap.weights.size(); ++k) {
        const uint8_t* p = s + (tap.first + static_cast<int64_t>(k)) * 3;
        for (int ch = 0; ch < 3; ++ch) acc[ch] += tap.weights[k] * static_cast<float>(p[ch]);
      }
      for (int ch = 0; ch < 3; ++ch) t[c * 3 + ch] = acc[ch] / 255.0f;
    }
  }
  // Vertical pass into the planes.
  const int64_t plane = int64_t{crop} * crop;
  for (int64_t r = 0; r < crop; ++r) {
    const Taps& tap = rows[static_cast<std::size_t>(r)];
    for (int64_t c = 0; c < crop; ++c) {
      float acc[3] = {0, 0, 0};
      for (std::size_t k = 0; k < tap.weights.size(); ++k) {
        const float* p = tmp.data() + ((tap.first - y0 + static_cast<int64_t>(k)) * crop + c) * 3;
        for (int ch = 0; ch < 3; ++ch) acc[ch] += tap.weights[k] * p[ch];
      }
      for (int ch = 0; ch < 3; ++ch) {
        dst[ch * plane + r * crop + c] = std::clamp(acc[ch], 0.0f, 1.0f);
      }
    }
  }
}

}  // namespace nnperf
