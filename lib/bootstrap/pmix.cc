#include "lib/bootstrap/pmix.hpp"

#include "lib/base/error.hpp"
#include "lib/base/log.hpp"

#ifdef WEFT_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#endif

namespace weft {

#ifndef WEFT_HAVE_PMIX

bool pmixCompiledIn() { return false; }

[[noreturn]] static void failNoPmix() {
  fail(weftSystemError,
       "this weft was built without PMIx (libpmix-dev was not found), so it cannot take the "
       "unique id from the launcher's PMIx server; rebuild with libpmix-dev, or set MASTER_ADDR "
       "and MASTER_PORT for weft's own store");
}

PmixJob pmixJob() { failNoPmix(); }

std::vector<uint8_t> pmixBroadcast(std::string_view, std::span<const uint8_t>, int, int64_t) {
  failNoPmix();
}

#else

namespace {

// The few PMIx functions weft uses, from libpmix.so.2 loaded at run time. (PMIx's convenience
// macros call library functions too, so the structures below are filled by hand.)
struct PmixApi {
  decltype(&PMIx_Init) init = nullptr;
  decltype(&PMIx_Finalize) finalize = nullptr;
  decltype(&PMIx_Get) get = nullptr;
  decltype(&PMIx_Put) put = nullptr;
  decltype(&PMIx_Commit) commit = nullptr;
  decltype(&PMIx_Fence) fence = nullptr;
  decltype(&PMIx_Error_string) errorString = nullptr;
  decltype(&PMIx_Value_destruct) valueDestruct = nullptr;  // optional
};

struct PmixClient {
  PmixApi api;
  pmix_proc_t self{};
  PmixJob job;
};

std::mutex gMutex;
PmixClient* gClient = nullptr;  // set once, never freed (finalised at exit)

std::string statusText(const PmixApi& api, pmix_status_t rc) {
  return fmt::format("{} ({})", api.errorString ? api.errorString(rc) : "?", rc);
}

void finalizeAtExit() {
  std::lock_guard lock(gMutex);
  if (gClient != nullptr) (void)gClient->api.finalize(nullptr, 0);
}

template <class F>
void resolve(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(library, name));
  if (out == nullptr)
    fail(weftSystemError, "libpmix.so.2 has no {} (a PMIx older than 4.x?)", name);
}

void setKey(char (&key)[PMIX_MAX_KEYLEN + 1], const char* name) {
  std::memset(key, 0, sizeof key);
  std::strncpy(key, name, PMIX_MAX_KEYLEN);
}

pmix_proc_t procOf(const pmix_proc_t& self, pmix_rank_t rank) {
  pmix_proc_t p{};
  std::memcpy(p.nspace, self.nspace, sizeof p.nspace);
  p.rank = rank;
  return p;
}

// An integer job attribute (PMIX_JOB_SIZE, PMIX_LOCAL_RANK, ...); nullopt when the server does
// not know it.
std::optional<int> getInteger(const PmixClient& c, pmix_rank_t rank, const char* key) {
  const pmix_proc_t proc = procOf(c.self, rank);
  pmix_value_t* value = nullptr;
  if (c.api.get(&proc, key, nullptr, 0, &value) != PMIX_SUCCESS || value == nullptr)
    return std::nullopt;
  std::optional<int> out;
  switch (value->type) {
    case PMIX_UINT32: out = static_cast<int>(value->data.uint32); break;
    case PMIX_UINT16: out = static_cast<int>(value->data.uint16); break;
    case PMIX_INT: out = value->data.integer; break;
    case PMIX_UINT64: out = static_cast<int>(value->data.uint64); break;
    default: break;
  }
  if (c.api.valueDestruct) c.api.valueDestruct(value);
  std::free(value);
  return out;
}

PmixClient& client() {
  std::lock_guard lock(gMutex);
  if (gClient != nullptr) return *gClient;
  void* library = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_GLOBAL);
  if (library == nullptr)
    fail(weftSystemError, "PMIx: cannot load libpmix.so.2 ({}); install libpmix2", ::dlerror());
  auto c = std::make_unique<PmixClient>();
  resolve(library, "PMIx_Init", c->api.init);
  resolve(library, "PMIx_Finalize", c->api.finalize);
  resolve(library, "PMIx_Get", c->api.get);
  resolve(library, "PMIx_Put", c->api.put);
  resolve(library, "PMIx_Commit", c->api.commit);
  resolve(library, "PMIx_Fence", c->api.fence);
  resolve(library, "PMIx_Error_string", c->api.errorString);
  c->api.valueDestruct =
      reinterpret_cast<decltype(&PMIx_Value_destruct)>(::dlsym(library, "PMIx_Value_destruct"));
  const pmix_status_t rc = c->api.init(&c->self, nullptr, 0);
  if (rc != PMIX_SUCCESS) {
    const char* uri = std::getenv("PMIX_SERVER_URI41");
    if (uri == nullptr) uri = std::getenv("PMIX_SERVER_URI4");
    if (uri == nullptr) uri = std::getenv("PMIX_SERVER_URI3");
    if (uri == nullptr) uri = std::getenv("PMIX_SERVER_URI2");
    fail(weftSystemError,
         "PMIx_Init failed: {} (PMIX_NAMESPACE={}, PMIX_RANK={}, server {}): the launcher's PMIx "
         "server does not accept this process",
         statusText(c->api, rc), std::getenv("PMIX_NAMESPACE") ? std::getenv("PMIX_NAMESPACE") : "-",
         std::getenv("PMIX_RANK") ? std::getenv("PMIX_RANK") : "-", uri ? uri : "unknown");
  }
  c->job.nspace = c->self.nspace;
  c->job.rank = static_cast<int>(c->self.rank);
  const std::optional<int> size = getInteger(*c, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE);
  if (!size) {
    (void)c->api.finalize(nullptr, 0);
    fail(weftSystemError, "PMIx: the server does not say the job's size (PMIX_JOB_SIZE)");
  }
  c->job.size = *size;
  c->job.localRank = getInteger(*c, c->self.rank, PMIX_LOCAL_RANK);
  c->job.localSize = getInteger(*c, PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE);
  WEFT_INFO(kSubsysBoot, "PMIx: connected as rank {} of {} in namespace {}", c->job.rank,
            c->job.size, c->job.nspace);
  gClient = c.release();
  std::atexit(finalizeAtExit);
  return *gClient;
}

}  // namespace

bool pmixCompiledIn() { return true; }

PmixJob pmixJob() { return client().job; }

std::vector<uint8_t> pmixBroadcast(std::string_view key, std::span<const uint8_t> value, int root,
                                   int64_t timeoutMs) {
  PmixClient& c = client();
  const std::string name(key);
  if (c.job.rank == root) {
    pmix_value_t v{};
    v.type = PMIX_BYTE_OBJECT;
    v.data.bo.bytes = reinterpret_cast<char*>(const_cast<uint8_t*>(value.data()));
    v.data.bo.size = value.size();
    pmix_status_t rc = c.api.put(PMIX_GLOBAL, name.c_str(), &v);
    if (rc == PMIX_SUCCESS) rc = c.api.commit();
    if (rc != PMIX_SUCCESS)
      fail(weftSystemError, "PMIx: rank {} cannot publish '{}': {}", root, name,
           statusText(c.api, rc));
  }
  pmix_info_t info[2]{};
  setKey(info[0].key, PMIX_COLLECT_DATA);
  info[0].value.type = PMIX_BOOL;
  info[0].value.data.flag = true;
  setKey(info[1].key, PMIX_TIMEOUT);
  info[1].value.type = PMIX_INT;
  info[1].value.data.integer = static_cast<int>(std::clamp<int64_t>((timeoutMs + 999) / 1000, 1,
                                                                      1 << 30));
  WEFT_TRACE(kSubsysBoot, "PMIx: rank {} fencing for '{}'", c.job.rank, name);
  const pmix_status_t rc = c.api.fence(nullptr, 0, info, 2);
  if (rc == PMIX_ERR_TIMEOUT)
    fail(weftTimeout,
         "PMIx: rank {}: timed out after {} ms in the fence that shares the unique id: not every "
         "process of the job (namespace {}, {} processes) called weftCommInitFromEnv",
         c.job.rank, timeoutMs, c.job.nspace, c.job.size);
  if (rc != PMIX_SUCCESS)
    fail(weftSystemError, "PMIx: rank {}: fence failed: {}", c.job.rank, statusText(c.api, rc));
  if (c.job.rank == root) return std::vector<uint8_t>(value.begin(), value.end());
  const pmix_proc_t from = procOf(c.self, static_cast<pmix_rank_t>(root));
  pmix_value_t* got = nullptr;
  const pmix_status_t grc = c.api.get(&from, name.c_str(), nullptr, 0, &got);
  if (grc != PMIX_SUCCESS || got == nullptr)
    fail(weftSystemError, "PMIx: rank {} cannot get '{}' from rank {}: {}", c.job.rank, name, root,
         statusText(c.api, grc));
  std::vector<uint8_t> out;
  if (got->type == PMIX_BYTE_OBJECT && got->data.bo.bytes != nullptr)
    out.assign(got->data.bo.bytes, got->data.bo.bytes + got->data.bo.size);
  const bool wrongType = got->type != PMIX_BYTE_OBJECT;
  if (c.api.valueDestruct) c.api.valueDestruct(got);
  std::free(got);
  if (wrongType) fail(weftSystemError, "PMIx: '{}' from rank {} is not a byte object", name, root);
  return out;
}

#endif

}  // namespace weft
