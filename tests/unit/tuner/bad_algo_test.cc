// Run with WEFT_ALGO=allreduce:rnig (CMakeLists.txt): communicator creation fails with
// weftInvalidArgument and a message that names the variable and the bad token.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "include/weft.h"

TEST_CASE("a bad WEFT_ALGO fails communicator init naming the bad token") {
  std::vector<weftComm_t> comms(2, nullptr);
  CHECK(weftCommInitAll(comms.data(), 2, nullptr) == weftInvalidArgument);
  const std::string message = weftGetLastError(nullptr);
  CHECK_THAT(message, Catch::Contains("WEFT_ALGO") && Catch::Contains("'rnig'"));
}
