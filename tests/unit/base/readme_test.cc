#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "lib/base/env.hpp"

TEST_CASE("the README's table lists every environment variable weft parses") {
  std::ifstream in(WEFT_SOURCE_DIR "/README.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const weft::EnvVar& v : weft::envVariables()) {
    INFO(v.name);
    CHECK(text.str().find(std::string("| `") + v.name + "` |") != std::string::npos);
  }
}
