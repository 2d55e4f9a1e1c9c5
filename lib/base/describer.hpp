// A description made only when it is needed (error and trace messages), so that the hot path
// of every call formats no strings: a function and the object it describes.
#pragma once

#include <string>

namespace weft {

struct Describer {
  std::string (*describe)(const void* what) = nullptr;
  const void* what = nullptr;
  const char* fallback = "operation";

  std::string str() const { return describe ? describe(what) : std::string(fallback); }
};

}  // namespace weft
