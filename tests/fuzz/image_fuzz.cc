// libFuzzer target: JPEG and PNG bytes through decode_image (libjpeg-turbo and libpng behind our
// setjmp phases), then the resize + centre crop. Properties beyond "no crash, no leak, no hang, no
// exit()": a decoded image has width x height x 3 bytes within the caps; the crop's floats lie in
// [0,1]; every refusal is a one-line nnperf::Error naming the input. The caps are lowered to 2^22
// pixels so that a forged header's legitimate allocation stays far under -rss_limit_mb.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "nnperf/core/error.h"
#include "nnperf/data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string name = "fuzz-image";
  const nnperf::ImageLimits limits{.max_side = 8192, .max_pixels = int64_t{1} << 22};
  nnperf::Image img;
  try {
    img = nnperf::decode_image(bytes, name, limits);
  } catch (const nnperf::Error& e) {
    nnperf::fuzz::check_error_message(e.what(), name);
    return 0;
  }
  FUZZ_CHECK(img.width >= 1 && img.height >= 1 && img.width <= limits.max_side &&
                 img.height <= limits.max_side && img.width * img.height <= limits.max_pixels,
             "%lldx%lld decoded", static_cast<long long>(img.width),
             static_cast<long long>(img.height));
  FUZZ_CHECK(img.rgb.size() == static_cast<std::size_t>(img.width * img.height * 3),
             "%zu bytes for %lldx%lld", img.rgb.size(), static_cast<long long>(img.width),
             static_cast<long long>(img.height));
  constexpr int kResize = 12, kCrop = 9;
  std::vector<float> crop(3 * kCrop * kCrop);
  nnperf::resize_center_crop(img, kResize, kCrop, crop.data());
  for (float v : crop) FUZZ_CHECK(v >= 0.0f && v <= 1.0f, "crop value %g", static_cast<double>(v));
  return 0;
}
