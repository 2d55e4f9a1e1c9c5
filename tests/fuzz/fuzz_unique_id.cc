// libFuzzer target: unique ids as 128 bytes (weftUniqueId) and as hex (WEFT_UNIQUE_ID).
#include <cstring>
#include <string_view>

#include "include/weft.h"
#include "lib/base/error.hpp"
#include "lib/bootstrap/unique_id.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;
  try {
    if (size >= WEFT_UNIQUE_ID_BYTES) {
      weftUniqueId id;
      std::memcpy(id.internal, data, WEFT_UNIQUE_ID_BYTES);
      const UniqueId parsed = UniqueId::fromWire(id);
      weftUniqueId again;
      parsed.toWire(again);
      if (UniqueId::fromWire(again).toHex() != parsed.toHex()) __builtin_trap();
    }
  } catch (const Error&) {
  }
  try {
    (void)uniqueIdFromHex(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
  }
  return 0;
}
