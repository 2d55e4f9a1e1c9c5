// libFuzzer target: the tuner's text inputs. WEFT_ALGO strings and tuning files (WEFT_TUNE_FILE)
// must parse or be rejected with weft::Error, never crash or hang; a tuning file that parses
// must survive a round trip through formatTuneFile.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "algorithms/cost/tune_file.hpp"
#include "lib/base/error.hpp"
#include "lib/tuner/algo_selection.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace weft;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)parseAlgoSelection(text);
  } catch (const Error&) {
  }
  try {
    const MachineParams params = parseTuneFile(text, "fuzz");
    (void)parseTuneFile(formatTuneFile(params), "fuzz (formatted)");
  } catch (const Error&) {
  }
  return 0;
}
