// libFuzzer target: the bootstrap's wire formats. The first 12 bytes are a frame header, the
// rest a payload given to the decoder the header's type selects (and to the claim decoder).
// Decoders must reject bad input with weft::Error, never crash, hang or over-allocate.
#include <cstddef>
#include <cstdint>
#include <span>

#include "lib/base/error.hpp"
#include "lib/bootstrap/frame.hpp"
#include "lib/bootstrap/handshake.hpp"
#include "lib/bootstrap/root_protocol.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;
  if (size < kFrameHeaderBytes) return 0;
  const std::span<const uint8_t> all(data, size);
  const std::span<const uint8_t> payload = all.subspan(kFrameHeaderBytes);
  try {
    const FrameHeader h = decodeHeader(all.first<kFrameHeaderBytes>(), "fuzz");
    if (h.type == FrameType::kHello) (void)decodeHello(payload, "fuzz");
    if (h.type == FrameType::kTable) (void)decodeTable(payload, "fuzz");
  } catch (const Error&) {
  }
  try {
    (void)decodeHello(payload, "fuzz");
  } catch (const Error&) {
  }
  try {
    (void)decodeTable(payload, "fuzz");
  } catch (const Error&) {
  }
  (void)decodeClaim(payload);
  return 0;
}
