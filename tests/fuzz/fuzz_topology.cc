// libFuzzer target: what weft builds its system picture from. First byte 'V': the rest is a
// peer's encoded view as it arrives over the bootstrap (decodeView must accept it or throw
// weft::Error; an accepted view is merged with itself and printed as JSON, as a communicator
// does). Otherwise the rest is an hwloc XML file (WEFT_TOPO_FILE): discovery must build a graph
// or throw weft::Error naming the file, and a graph it builds survives the view round trip.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "lib/base/error.hpp"
#include "lib/topology/discover.hpp"
#include "lib/topology/picture.hpp"

using namespace weft;
using namespace weft::topology;

namespace {

void mergeAndPrint(const LocalView& view) {
  const std::vector<LocalView> views{view, view};
  const SystemPicture picture = mergeViews(views);
  (void)formatPictureJson(picture);
}

}  // namespace

// hwloc's libxml2 importer is a plugin that hwloc loads and unloads with each topology. Unloaded,
// what libxml2 keeps in its own globals after some rejected files looks leaked to
// LeakSanitizer (from an "unknown module"); kept loaded, it stays reachable, as it is in a
// process that loads hwloc once.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dlopen(HWLOC_PLUGINS_DIR "/hwloc_xml_libxml.so", RTLD_NOW | RTLD_NODELETE);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] == 'V') {
    try {
      mergeAndPrint(decodeView({data + 1, size - 1}, 1));
    } catch (const Error&) {
    }
    return 0;
  }
  static const std::string path = "/tmp/weft-fuzz-topology-" + std::to_string(getpid()) + ".xml";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  try {
    LocalView view;
    view.hostId = "fuzz";
    view.graph = discover(Source{path, ""});
    const std::vector<uint8_t> bytes = encodeView(view);
    mergeAndPrint(decodeView(bytes, 0));
  } catch (const Error&) {
  }
  std::remove(path.c_str());
  return 0;
}
