#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "lib/base/env.hpp"
#include "lib/base/error.hpp"

namespace {
weft::Env parse(const std::map<std::string, std::string>& vars) {
  return weft::parseEnv([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}
}  // namespace

TEST_CASE("an empty environment gives the documented defaults") {
  weft::Env e = parse({});
  CHECK(e.debug == weft::LogLevel::Warn);
  CHECK(e.debugSubsys == weft::kSubsysAll);
  CHECK(e.timeoutMs == 300000);
  CHECK(e.debugFile.empty());
  CHECK(e.socketIfname.empty());
  CHECK(e.netChannels == 1);
  CHECK(parse({{"WEFT_NET_CHANNELS", "4"}}).netChannels == 4);
  CHECK(e.shmSpread);
  CHECK_FALSE(parse({{"WEFT_SHM_SPREAD", "0"}}).shmSpread);
  CHECK(e.shmTune);
  CHECK_FALSE(parse({{"WEFT_SHM_TUNE", "0"}}).shmTune);
  CHECK(parse({{"WEFT_SHM_CORES", "8"}}).shmCores == 8);
  CHECK(parse({}).shmCores == 0);
}

TEST_CASE("WEFT_DEBUG and WEFT_DEBUG_SUBSYS parse like NCCL's") {
  weft::Env e = parse({{"WEFT_DEBUG", "info"}, {"WEFT_DEBUG_SUBSYS", "INIT,NET"}});
  CHECK(e.debug == weft::LogLevel::Info);
  CHECK(e.debugSubsys == (weft::kSubsysInit | weft::kSubsysNet));
  e = parse({{"WEFT_DEBUG_SUBSYS", "^COLL"}});
  CHECK((e.debugSubsys & weft::kSubsysColl) == 0);
  CHECK((e.debugSubsys & weft::kSubsysInit) != 0);
}

TEST_CASE("bad values of WEFT_* variables are errors that name the variable") {
  auto expectError = [](std::map<std::string, std::string> vars, const std::string& needle) {
    try {
      parse(vars);
      FAIL("no error for " << vars.begin()->first << "=" << vars.begin()->second);
    } catch (const weft::Error& e) {
      CHECK(e.result() == weftInvalidArgument);
      CHECK_THAT(e.what(), Catch::Contains(needle));
    }
  };
  expectError({{"WEFT_DEBUG", "LOUD"}}, "WEFT_DEBUG");
  expectError({{"WEFT_DEBUG_SUBSYS", "INIT,BOGUS"}}, "BOGUS");
  expectError({{"WEFT_TIMEOUT_MS", "soon"}}, "WEFT_TIMEOUT_MS");
  expectError({{"WEFT_TIMEOUT_MS", "0"}}, "out of range");
  expectError({{"WEFT_TIMEOUT_MS", "10x"}}, "WEFT_TIMEOUT_MS");
  expectError({{"WEFT_CHUNK_BYTES", "12"}}, "WEFT_CHUNK_BYTES");
  for (const char* channels : {"0", "9", "two"})
    expectError({{"WEFT_NET_CHANNELS", channels}}, "WEFT_NET_CHANNELS");
  for (const char* cores : {"0", "1025", "many"})
    expectError({{"WEFT_SHM_CORES", cores}}, "WEFT_SHM_CORES");
  for (const char* tune : {"2", "yes"}) expectError({{"WEFT_SHM_TUNE", tune}}, "WEFT_SHM_TUNE");
}
