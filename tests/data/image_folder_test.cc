// Tests for data/image_decode and data/image_folder: JPEG and PNG fixtures written at run time with
// libjpeg and libpng (an RGB gradient, grey, RGBA and 16-bit PNGs, quality-100 4:4:4 JPEGs), the
// decoded values (PNG exact, JPEG within 3/255), resize + centre crop against a float64 reference
// written here, class order, corrupt files with kFail and kSkip, split mismatches, forged headers.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/data/image_decode.h"
#include "nnperf/data/image_folder.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A smooth RGB gradient with a different ramp per channel (JPEG keeps it within a few levels).
std::vector<uint8_t> gradient(int w, int h) {
  std::vector<uint8_t> rgb(static_cast<std::size_t>(w * h * 3));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = rgb.data() + (y * w + x) * 3;
      p[0] = static_cast<uint8_t>(x * 255 / (w - 1));
      p[1] = static_cast<uint8_t>(y * 255 / (h - 1));
      p[2] = static_cast<uint8_t>(128 + (x - y) * 2);
    }
  }
  return rgb;
}

// Writes a PNG: `channels` 1 (grey), 2 (grey + alpha), 3 (RGB) or 4 (RGBA) of 8 or 16 bits;
// samples are given as uint16 values (written big-endian when 16-bit).
void write_png(const fs::path& path, int w, int h, int channels, int depth,
               const std::vector<uint16_t>& samples) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  const int types[] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                       PNG_COLOR_TYPE_RGB_ALPHA};
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), depth,
               types[channels], PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const int bps = depth / 8;
  std::vector<uint8_t> row(static_cast<std::size_t>(w * channels * bps));
  for (int y = 0; y < h; ++y) {
    for (int i = 0; i < w * channels; ++i) {
      const uint16_t v = samples[static_cast<std::size_t>(y * w * channels + i)];
      if (bps == 1) {
        row[static_cast<std::size_t>(i)] = static_cast<uint8_t>(v);
      } else {
        row[static_cast<std::size_t>(2 * i)] = static_cast<uint8_t>(v >> 8);
        row[static_cast<std::size_t>(2 * i + 1)] = static_cast<uint8_t>(v & 0xff);
      }
    }
    png_write_row(png, row.data());
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

// Writes a baseline JPEG at quality 100 without chroma subsampling; channels 1 or 3.
void write_jpeg(const fs::path& path, int w, int h, int channels, const std::vector<uint8_t>& px) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = channels;
  c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  for (int i = 0; i < c.num_components; ++i) {
    c.comp_info[i].h_samp_factor = 1;
    c.comp_info[i].v_samp_factor = 1;
  }
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(px.data() + c.next_scanline * w * channels);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

std::vector<uint16_t> widen(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

TEST(DecodeImage, PngRgbGreyRgbaAnd16BitExactly) {
  TempDir tmp("nnperf-img");
  const int w = 40, h = 30;
  const std::vector<uint8_t> rgb = gradient(w, h);
  write_png(tmp / "rgb.png", w, h, 3, 8, widen(rgb));
  Image img = read_image(tmp / "rgb.png");
  EXPECT_EQ(img.width, w);
  EXPECT_EQ(img.height, h);
  EXPECT_EQ(img.rgb, rgb);

  std::vector<uint16_t> grey(static_cast<std::size_t>(w * h));
  for (int i = 0; i < w * h; ++i)
    grey[static_cast<std::size_t>(i)] = static_cast<uint16_t>((i * 7) % 256);
  write_png(tmp / "grey.png", w, h, 1, 8, grey);
  img = read_image(tmp / "grey.png");
  for (int i = 0; i < w * h; ++i) {
    for (int c = 0; c < 3; ++c)
      ASSERT_EQ(img.rgb[static_cast<std::size_t>(i * 3 + c)], grey[static_cast<std::size_t>(i)]);
  }

  // RGBA: alpha is dropped, not composited (alpha 0 keeps its colour).
  std::vector<uint16_t> rgba;
  for (int i = 0; i < w * h; ++i) {
    for (int c = 0; c < 3; ++c) rgba.push_back(rgb[static_cast<std::size_t>(i * 3 + c)]);
    rgba.push_back(static_cast<uint16_t>(i % 2 == 0 ? 0 : 200));
  }
  write_png(tmp / "rgba.png", w, h, 4, 8, rgba);
  EXPECT_EQ(read_image(tmp / "rgba.png").rgb, rgb);

  // 16-bit: v -> round(v * 255 / 65535).
  std::vector<uint16_t> deep;
  for (int i = 0; i < w * h * 3; ++i) deep.push_back(static_cast<uint16_t>((i * 2731u) % 65536u));
  write_png(tmp / "deep.png", w, h, 3, 16, deep);
  img = read_image(tmp / "deep.png");
  for (int i = 0; i < w * h * 3; ++i) {
    const auto want =
        static_cast<int>(std::lround(deep[static_cast<std::size_t>(i)] * 255.0 / 65535.0));
    ASSERT_EQ(img.rgb[static_cast<std::size_t>(i)], want)
        << "sample " << i << " = " << deep[static_cast<std::size_t>(i)];
  }
}

TEST(DecodeImage, JpegWithinThreeLevelsAtQuality100) {
  TempDir tmp("nnperf-img");
  const int w = 40, h = 30;
  const std::vector<uint8_t> rgb = gradient(w, h);
  write_jpeg(tmp / "g.jpg", w, h, 3, rgb);
  const Image img = read_image(tmp / "g.jpg");
  ASSERT_EQ(img.width, w);
  ASSERT_EQ(img.height, h);
  int worst = 0;
  for (std::size_t i = 0; i < rgb.size(); ++i)
    worst = std::max(worst, std::abs(img.rgb[i] - rgb[i]));
  EXPECT_LE(worst, 3);

  std::vector<uint8_t> grey(static_cast<std::size_t>(w * h));
  for (int i = 0; i < w * h; ++i)
    grey[static_cast<std::size_t>(i)] = rgb[static_cast<std::size_t>(i * 3)];
  write_jpeg(tmp / "grey.jpeg", w, h, 1, grey);
  const Image g = read_image(tmp / "grey.jpeg");
  for (int i = 0; i < w * h; ++i) {
    const auto* p = g.rgb.data() + i * 3;
    ASSERT_EQ(p[0], p[1]);
    ASSERT_EQ(p[1], p[2]);
    ASSERT_LE(std::abs(p[0] - grey[static_cast<std::size_t>(i)]), 2);
  }
}

TEST(DecodeImage, TruncatedGarbageAndForgedHeadersAreErrorsNamingTheInput) {
  TempDir tmp("nnperf-img");
  const std::vector<uint8_t> rgb = gradient(40, 30);
  write_jpeg(tmp / "g.jpg", 40, 30, 3, rgb);
  const std::string jpeg = read_bytes(tmp / "g.jpg");
  std::string e = error_of([&] { decode_image(jpeg.substr(0, jpeg.size() / 2), "half.jpg"); });
  EXPECT_EQ(e.rfind("half.jpg: corrupt or unsupported JPEG: Premature end of JPEG file", 0), 0u)
      << e;
  e = error_of([&] { decode_image(jpeg.substr(0, 20), "head.jpg"); });
  EXPECT_EQ(e.rfind("head.jpg: corrupt or unsupported JPEG", 0), 0u) << e;
  e = error_of([&] { decode_image("GIF89a......", "x.png"); });
  EXPECT_EQ(e,
            "x.png: not a JPEG or PNG image (it starts with 47 49 46 38 39 61 2e 2e; expected "
            "ff d8 ff or 89 50 4e 47 0d 0a 1a 0a)");

  // A JPEG whose frame header claims 65000 x 65000 pixels (over 2^28) is refused before decoding.
  std::string forged = jpeg;
  const std::size_t sof = forged.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  forged[sof + 5] = forged[sof + 7] = static_cast<char>(0xfd);
  forged[sof + 6] = forged[sof + 8] = static_cast<char>(0xe8);
  e = error_of([&] { decode_image(forged, "big.jpg"); });
  EXPECT_EQ(e.rfind("big.jpg: JPEG header claims 65000x65000 pixels, over the limit", 0), 0u) << e;

  // PNG headers: 70000 x 10 (over 65536 per side) and 20000 x 20000 (over 2^28 pixels); a
  // within-limits claim that the file's size cannot hold is refused by the deflate bound.
  auto png_header = [](uint32_t w, uint32_t h) {
    std::string ihdr = "IHDR";
    for (uint32_t v : {w, h}) {
      for (int s = 24; s >= 0; s -= 8) ihdr.push_back(static_cast<char>((v >> s) & 0xff));
    }
    ihdr += std::string("\x08\x02\x00\x00\x00", 5);
    const uLong crc =
        crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()), static_cast<uInt>(ihdr.size()));
    std::string out = "\x89PNG\r\n\x1a\n";
    out += std::string("\x00\x00\x00\x0d", 4) + ihdr;
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<char>((crc >> s) & 0xff));
    // png_read_info reads up to the first IDAT: a 10-byte one (never inflated here).
    return out + std::string("\x00\x00\x00\x0aIDAT", 8) + std::string(14, '\x00');
  };
  e = error_of([&] { decode_image(png_header(70000, 10), "wide.png"); });
  EXPECT_EQ(e.rfind("wide.png: PNG header claims 70000x10 pixels, over the limit of 65536", 0), 0u)
      << e;
  e = error_of([&] { decode_image(png_header(20000, 20000), "huge.png"); });
  EXPECT_NE(e.find("huge.png: PNG header claims 20000x20000 pixels, over the limit"),
            std::string::npos)
      << e;
  e = error_of([&] { decode_image(png_header(10000, 10000), "lie.png"); });
  EXPECT_NE(e.find("lie.png: PNG header claims 10000x10000 pixels"), std::string::npos) << e;
  EXPECT_NE(e.find("deflate expands at most 1032:1"), std::string::npos) << e;
}

// ---- resize + centre crop against float64 ----

// Half-to-even rounding of d / 2 (torchvision's round((size - crop) / 2)).
int64_t half_even_half(int64_t d) {
  if (d % 2 == 0) return d / 2;
  const int64_t lo = (d - 1) / 2;
  return lo % 2 == 0 ? lo : lo + 1;
}

// The normalised triangle weights of every input pixel for output pixel o.
std::vector<double> reference_weights(int64_t in, int64_t out, int64_t o) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double radius = std::max(1.0, scale);
  const double centre = (static_cast<double>(o) + 0.5) * scale;
  std::vector<double> w(static_cast<std::size_t>(in));
  double sum = 0;
  for (int64_t x = 0; x < in; ++x) {
    const double d = std::abs(static_cast<double>(x) + 0.5 - centre) / radius;
    w[static_cast<std::size_t>(x)] = d < 1 ? 1 - d : 0;
    sum += w[static_cast<std::size_t>(x)];
  }
  for (double& v : w) v /= sum;
  return w;
}

std::vector<double> reference_resize_crop(const Image& img, int resize, int crop) {
  const int64_t w = img.width, h = img.height;
  const int64_t rw = w <= h ? resize : resize * w / h;
  const int64_t rh = w <= h ? resize * h / w : resize;
  const int64_t left = half_even_half(rw - crop), top = half_even_half(rh - crop);
  std::vector<double> out(static_cast<std::size_t>(3 * crop * crop));
  for (int r = 0; r < crop; ++r) {
    const std::vector<double> wy = reference_weights(h, rh, top + r);
    for (int c = 0; c < crop; ++c) {
      const std::vector<double> wx = reference_weights(w, rw, left + c);
      for (int ch = 0; ch < 3; ++ch) {
        double acc = 0;
        for (int64_t y = 0; y < h; ++y) {
          for (int64_t x = 0; x < w; ++x) {
            acc += wy[static_cast<std::size_t>(y)] * wx[static_cast<std::size_t>(x)] *
                   img.rgb[static_cast<std::size_t>((y * w + x) * 3 + ch)] / 255.0;
          }
        }
        out[static_cast<std::size_t>((ch * crop + r) * crop + c)] = acc;
      }
    }
  }
  return out;
}

TEST(ResizeCenterCrop, MatchesFloat64Reference) {
  struct Case {
    int w, h, resize, crop;
  };
  // Downscaling both ways, odd leftovers (rounding of the crop offset), upscaling, identity.
  const Case cases[] = {{40, 30, 20, 16}, {30, 40, 20, 17}, {40, 30, 32, 32}, {101, 37, 24, 24},
                        {17, 23, 40, 35}, {9, 13, 30, 21},  {16, 16, 16, 16}, {64, 48, 10, 3}};
  uint64_t seed = 1;
  for (const Case& k : cases) {
    Image img;
    img.width = k.w;
    img.height = k.h;
    const std::vector<float> r = test::random_vector(k.w * k.h * 3, seed++, 0.0f, 256.0f);
    for (float v : r) img.rgb.push_back(static_cast<uint8_t>(std::min(255.0f, v)));
    std::vector<float> got(static_cast<std::size_t>(3 * k.crop * k.crop));
    resize_center_crop(img, k.resize, k.crop, got.data());
    const std::vector<double> want = reference_resize_crop(img, k.resize, k.crop);
    int nonzero = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 1e-5)
          << k.w << "x" << k.h << " resize " << k.resize << " crop " << k.crop << " at " << i;
      nonzero += want[i] > 0.01;
    }
    EXPECT_GT(nonzero, static_cast<int>(got.size()) / 2);
  }
  // Same size: the pixels themselves.
  Image img;
  img.width = img.height = 4;
  for (int i = 0; i < 48; ++i) img.rgb.push_back(static_cast<uint8_t>(i * 5));
  std::vector<float> got(48);
  resize_center_crop(img, 4, 4, got.data());
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_FLOAT_EQ(got[16 + 5], 16 * 5 / 255.0f);  // G plane, (1, 1): pixel 5's green = byte 16
}

TEST(ResizeCenterCrop, GeometryFollowsTorchvision) {
  const ResizeCrop g = resize_crop_geometry(500, 375, 256, 224);
  EXPECT_EQ(g.resized_w, 341);  // 256 * 500 / 375 = 341.33
  EXPECT_EQ(g.resized_h, 256);
  EXPECT_EQ(g.left, 58);  // round(58.5) = 58 (half to even)
  EXPECT_EQ(g.top, 16);
}

// ---- folders ----

void make_class(const fs::path& dir, const std::string& name, int n, int seed) {
  fs::create_directories(dir / name);
  for (int i = 0; i < n; ++i) {
    std::vector<uint8_t> rgb = gradient(24 + i, 20);
    for (auto& v : rgb) v = static_cast<uint8_t>(v ^ (seed * 16));
    if (i % 2 == 0) {
      write_png(dir / name / ("img" + std::to_string(i) + ".PNG"), 24 + i, 20, 3, 8, widen(rgb));
    } else {
      write_jpeg(dir / name / ("img" + std::to_string(i) + ".Jpg"), 24 + i, 20, 3, rgb);
    }
  }
}

TEST(ImageFolder, ClassesSortedByBytesLabelsAndPixels) {
  TempDir tmp("nnperf-imgdir");
  const fs::path root = tmp / "mini";
  make_class(root / "train", "b", 2, 1);
  make_class(root / "train", "a", 3, 2);
  make_class(root / "train", "C", 1, 3);
  write_bytes(root / "train" / "a" / "README.txt", "not an image");
  const ImageFolderOptions opt{.resize = 16, .input_size = 12};
  const ImageFolderData d = load_image_folder(root, "train", opt);
  EXPECT_EQ(d.classes, (std::vector<std::string>{"C", "a", "b"}));
  EXPECT_EQ(d.data.labels, (std::vector<int32_t>{0, 1, 1, 1, 2, 2}));
  EXPECT_EQ(d.data.num_classes, 3);
  EXPECT_EQ(d.data.name, "mini/train");
  EXPECT_EQ(d.data.images.shape().dims(), (std::vector<int64_t>{6, 3, 12, 12}));
  EXPECT_TRUE(d.skipped.empty());
  // Sample 2 is a/img1.Jpg: the same floats as decoding and cropping it alone.
  std::vector<float> want(3 * 12 * 12);
  resize_center_crop(read_image(root / "train" / "a" / "img1.Jpg"), 16, 12, want.data());
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(d.data.images[2 * 432 + static_cast<int64_t>(i)], want[i]);

  const ImageFolderData two =
      load_image_folder(root, "train", {.resize = 16, .input_size = 12, .max_per_class = 1});
  EXPECT_EQ(two.data.labels, (std::vector<int32_t>{0, 1, 2}));
}

TEST(ImageFolder, CorruptImagesFailOrAreSkippedAndCounted) {
  TempDir tmp("nnperf-imgdir");
  const fs::path root = tmp / "mini";
  make_class(root / "train", "cat", 3, 1);
  make_class(root / "train", "dog", 2, 2);
  const std::string jpeg = read_bytes(root / "train" / "cat" / "img1.Jpg");
  write_bytes(root / "train" / "cat" / "img1.Jpg", jpeg.substr(0, jpeg.size() * 2 / 3));
  write_bytes(root / "train" / "dog" / "zz.png", "this is not a png at all");
  const ImageFolderOptions opt{.resize = 16, .input_size = 16};
  const std::string e = error_of([&] { load_image_folder(root, "train", opt); });
  EXPECT_EQ(
      e.rfind((root / "train" / "cat" / "img1.Jpg").string() + ": corrupt or unsupported JPEG", 0),
      0u)
      << e;

  ImageFolderOptions skip = opt;
  skip.on_bad_image = OnBadImage::kSkip;
  const ImageFolderData d = load_image_folder(root, "train", skip);
  ASSERT_EQ(d.skipped.size(), 2u);
  EXPECT_EQ(d.skipped[0].path, (root / "train" / "cat" / "img1.Jpg").string());
  EXPECT_EQ(d.skipped[1].path, (root / "train" / "dog" / "zz.png").string());
  EXPECT_NE(d.skipped[1].reason.find("zz.png: not a JPEG or PNG image"), std::string::npos);
  EXPECT_EQ(d.data.size(), 4);
  EXPECT_EQ(d.data.labels, (std::vector<int32_t>{0, 0, 1, 1}));
  // The kept samples moved down in order: sample 1 is cat/img2.PNG.
  std::vector<float> want(3 * 16 * 16);
  resize_center_crop(read_image(root / "train" / "cat" / "img2.PNG"), 16, 16, want.data());
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(d.data.images[768 + static_cast<int64_t>(i)], want[i]);
}

TEST(ImageFolder, RefusalsNameThePath) {
  TempDir tmp("nnperf-imgdir");
  const fs::path root = tmp / "mini";
  const ImageFolderOptions opt{.resize = 8, .input_size = 8};
  EXPECT_NE(
      error_of([&] { load_image_folder(root, "train", opt); }).find("train: folder not found"),
      std::string::npos);
  make_class(root / "train", "a", 1, 1);
  make_class(root / "train", "b", 1, 2);
  make_class(root / "val", "a", 1, 1);
  make_class(root / "val", "c", 1, 2);
  std::string e = error_of([&] { load_image_folder(root, "val", opt); });
  EXPECT_NE(e.find("val: its class folders differ from"), std::string::npos) << e;
  EXPECT_NE(e.find("/train: b; only in"), std::string::npos) << e;
  EXPECT_NE(e.find("/val: c;"), std::string::npos) << e;
  fs::create_directories(root / "train" / "empty");
  e = error_of([&] { load_image_folder(root, "train", opt); });
  EXPECT_EQ(e.rfind((root / "train" / "empty").string() + ": no images", 0), 0u) << e;
  fs::create_directories(root / "test");
  e = error_of([&] { load_image_folder(root, "test", opt); });
  EXPECT_NE(e.find("test: no class folders"), std::string::npos) << e;
  e = error_of([&] { load_image_folder(root, "train", {.resize = 8, .input_size = 9}); });
  EXPECT_NE(e.find("need 1 <= input size <= resize"), std::string::npos) << e;
}

TEST(ImageFolder, OneClassIsRefusedAndWhatIsNotAnImageIsSaid) {
  TempDir tmp("nnperf-imgdir");
  const fs::path root = tmp / "one";
  make_class(root / "train", "cat", 2, 1);
  std::string e =
      error_of([&] { load_image_folder(root, "train", {.resize = 8, .input_size = 8}); });
  EXPECT_NE(e.find("train: one class folder (cat): a classifier needs at least two classes"),
            std::string::npos)
      << e;
  // Images one level too deep and other files are named in a warning, not silently dropped.
  make_class(root / "train", "dog", 2, 2);
  make_class(root / "train" / "dog", "nested", 1, 3);
  std::ofstream(root / "train" / "dog" / "notes.txt") << "x";
  testing::internal::CaptureStderr();
  const ImageFolderData d = load_image_folder(root, "train", {.resize = 8, .input_size = 8});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(d.data.size(), 4);
  EXPECT_NE(
      err.find("dog: 2 entries ignored (nested/, notes.txt): images are read from the class folder "
               "itself"),
      std::string::npos)
      << err;
}

TEST(ImageFolder, MemoryBudgetIsCheckedBeforeDecoding) {
  TempDir tmp("nnperf-imgdir");
  const fs::path root = tmp / "mini";
  make_class(root / "train", "a", 1, 1);
  make_class(root / "train", "b", 1, 2);
  // An image that cannot be decoded: decoding first would fail on it.
  write_bytes(root / "train" / "a" / "zz.png", "this is not a png at all");
  const ImageFolderOptions opt{.resize = 512, .input_size = 512};
  std::string e = error_of([&] { load_image_folder(root, "train", opt); });
  ASSERT_NE(e.find("zz.png: not a JPEG or PNG image"), std::string::npos) << e;
  {
    test::ScopedEnv limit("NNPERF_MEMORY_LIMIT", "1M");
    e = error_of([&] { load_image_folder(root, "train", opt); });
  }
  EXPECT_NE(e.find("3 images as 3x512x512 float32) needs"), std::string::npos) << e;
  EXPECT_NE(e.find("(capped by NNPERF_MEMORY_LIMIT)"), std::string::npos) << e;
  EXPECT_EQ(e.find("zz.png"), std::string::npos) << e;
}

}  // namespace
}  // namespace nnperf
