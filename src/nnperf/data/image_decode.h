// JPEG (libjpeg-turbo) and PNG (libpng) decoding to 8-bit RGB, and the deterministic evaluation
// transform: shorter side resized to S with an antialiased bilinear (triangle) filter, then a
// centre crop of C x C, as float32 planes in [0,1]. Images are hostile input: the header's size
// is checked against caps and the memory budget before any pixel buffer is allocated, and a
// corrupt file ends in an nnperf::Error naming it (never exit(), never a message on stderr).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace nnperf {

// 8-bit RGB, interleaved, row-major: rgb[(y * width + x) * 3 + c].
struct Image {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb;
};

struct ImageLimits {
  int64_t max_side = 65536;               // per side, from the header, before decoding
  int64_t max_pixels = int64_t{1} << 28;  // width x height
};

// Decodes a JPEG or PNG (recognised by its signature, not its name) to RGB: grey becomes three
// equal channels, alpha is dropped (not composited), palettes are expanded, 16-bit samples are
// rounded to 8 bits (v * 255 / 65535), CMYK JPEGs are converted. `name` starts every error.
// JPEG warnings that mean lost pixels (premature end of data, bad Huffman code) are errors.
Image decode_image(std::string_view bytes, const std::string& name, const ImageLimits& limits = {});
// The same for a file (regular files only; its size is checked against the budget first).
Image read_image(const std::filesystem::path& path, const ImageLimits& limits = {});

// Where the crop lies: the image is resized to resized_w x resized_h (shorter side = resize, the
// longer one resize * long / short rounded down, as torchvision's Resize(int)), and the crop's
// top-left corner is at (left, top) = round-half-even((resized - crop) / 2) (torchvision's
// CenterCrop).
struct ResizeCrop {
  int64_t resized_w = 0, resized_h = 0, left = 0, top = 0;
};
ResizeCrop resize_crop_geometry(int64_t width, int64_t height, int resize, int crop);

// Writes 3 x crop x crop floats (planes R, G, B; values byte / 255, filtered) to dst. The filter
// is separable: output pixel o on an axis of scale s = in / out is centred at (o + 0.5) * s and
// averages input pixels x with the weights max(0, 1 - |x + 0.5 - centre| / max(s, 1)),
// normalised to sum 1 (PIL's antialiased BILINEAR). Needs 1 <= crop <= resize.
void resize_center_crop(const Image& src, int resize, int crop, float* dst);

}  // namespace nnperf
