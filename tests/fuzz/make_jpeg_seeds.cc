// Writes the JPEG seeds of image_fuzz into the folder given as argv[1] (make_seeds.py compiles and
// runs this: Python has no JPEG encoder here). Small images in the encodings decode_image meets:
// baseline 4:2:0 and 4:4:4, grey, progressive, restart markers, optimised Huffman tables,
// arithmetic coding, CMYK and Adobe-inverted CMYK; plus cut-short copies. Deterministic.
// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Options {
  int w = 16, h = 16, components = 3;
  J_COLOR_SPACE space = JCS_RGB;
  bool progressive = false, optimize = false, arith = false, subsample = true;
  int restart = 0, quality = 90;
};

std::vector<unsigned char> encode(const Options& o) {
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = static_cast<JDIMENSION>(o.w);
  c.image_height = static_cast<JDIMENSION>(o.h);
  c.input_components = o.components;
  c.in_color_space = o.space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, o.quality, TRUE);
  if (!o.subsample) {
    for (int i = 0; i < c.num_components; ++i) {
      c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
    }
  }
  if (o.progressive) jpeg_simple_progression(&c);
  c.optimize_coding = o.optimize ? TRUE : FALSE;
  c.arith_code = o.arith ? TRUE : FALSE;
  c.restart_interval = static_cast<unsigned>(o.restart);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(static_cast<std::size_t>(o.w * o.components));
  while (c.next_scanline < c.image_height) {
    const int y = static_cast<int>(c.next_scanline);
    for (int x = 0; x < o.w; ++x) {
      for (int k = 0; k < o.components; ++k) {
        row[static_cast<std::size_t>(x * o.components + k)] =
            static_cast<unsigned char>((x * 16 + y * 9 + k * 70) % 256);
      }
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<unsigned char> out(buf, buf + size);
  std::free(buf);
  return out;
}

void write(const std::string& dir, const std::string& name, const std::vector<unsigned char>& b,
           std::size_t n) {
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(b.data(), 1, n, f) != n || std::fclose(f) != 0) {
    std::fprintf(stderr, "make_jpeg_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_jpeg_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  struct Seed {
    const char* name;
    Options o;
  };
  const Seed seeds[] = {
      {"baseline-420-16x16.jpg", {}},
      {"baseline-444-13x7.jpg", {.w = 13, .h = 7, .subsample = false}},
      {"grey-9x11.jpg", {.w = 9, .h = 11, .components = 1, .space = JCS_GRAYSCALE}},
      {"progressive-24x16.jpg", {.w = 24, .h = 16, .progressive = true}},
      {"restart-every-mcu-32x16.jpg", {.w = 32, .h = 16, .restart = 1}},
      {"optimized-huffman-16x8.jpg", {.w = 16, .h = 8, .optimize = true}},
      {"arithmetic-16x16.jpg", {.arith = true}},
      {"cmyk-8x8.jpg", {.w = 8, .h = 8, .components = 4, .space = JCS_CMYK}},
      {"quality-100-8x8.jpg", {.w = 8, .h = 8, .subsample = false, .quality = 100}},
  };
  for (const Seed& s : seeds) {
    const std::vector<unsigned char> b = encode(s.o);
    write(dir, s.name, b, b.size());
  }
  const std::vector<unsigned char> b = encode({});
  write(dir, "broken-cut-in-scan.jpg", b, b.size() * 3 / 4);
  write(dir, "broken-header-only.jpg", b, 200 < b.size() ? 200 : b.size());
  const std::vector<unsigned char> p = encode({.w = 24, .h = 16, .progressive = true});
  write(dir, "broken-progressive-cut.jpg", p, p.size() / 2);
  return 0;
}
