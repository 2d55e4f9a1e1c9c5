// Version, error strings, reduction operators and host streams.
#include <cstring>

#include "algorithms/reduce/datatype.hpp"
#include "lib/api/handles.hpp"
#include "lib/comm/comm.hpp"

using namespace weft;

extern "C" {

weftResult_t weftGetVersion(int* version) {
  return api::guard("weftGetVersion", nullptr, [&] {
    if (version == nullptr) fail(weftInvalidArgument, "version is NULL");
    *version = WEFT_VERSION_CODE;
  });
}

const char* weftGetErrorString(weftResult_t result) { return resultName(result); }

const char* weftGetLastError(weftComm_t comm) { return api::lastError(comm); }

weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                      weftScalarResidence_t residence, weftComm_t comm) {
  return api::guard("weftRedOpCreatePreMulSum", comm, [&] {
    if (op == nullptr) fail(weftInvalidArgument, "op (the output pointer) is NULL");
    if (scalar == nullptr) fail(weftInvalidArgument, "scalar is NULL");
    if (!isValidDatatype(datatype))
      fail(weftInvalidArgument, "datatype={}: not a weftDataType_t (0..{})",
           static_cast<int>(datatype), weftNumTypes - 1);
    if (residence != weftScalarDevice && residence != weftScalarHostImmediate)
      fail(weftInvalidArgument, "residence={}: expected weftScalarDevice or "
           "weftScalarHostImmediate", static_cast<int>(residence));
    *op = api::readyComm(comm)->redOps().createPreMulSum(scalar, datatype, residence);
  });
}

weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm) {
  return api::guard("weftRedOpDestroy", comm,
                    [&] { api::readyComm(comm)->redOps().destroy(op); });
}

weftResult_t weftStreamCreate(weftStream_t* stream) {
  return api::guard("weftStreamCreate", nullptr, [&] {
    if (stream == nullptr) fail(weftInvalidArgument, "stream (the output pointer) is NULL");
    auto* s = new weftStream;
    api::registerStream(s);
    *stream = s;
  });
}

weftResult_t weftStreamSynchronize(weftStream_t stream) {
  return api::guard("weftStreamSynchronize", nullptr, [&] {
    if (stream == nullptr) fail(weftInvalidArgument, "stream is NULL");
    if (auto error = api::lookupStream(stream)->impl.synchronize()) throw *error;
  });
}

weftResult_t weftStreamQuery(weftStream_t stream) {
  weftResult_t result = weftSuccess;
  const weftResult_t checked = api::guard("weftStreamQuery", nullptr, [&] {
    if (stream == nullptr) fail(weftInvalidArgument, "stream is NULL");
    result = api::lookupStream(stream)->impl.idle() ? weftSuccess : weftInProgress;
  });
  return checked != weftSuccess ? checked : result;
}

weftResult_t weftStreamDestroy(weftStream_t stream) {
  return api::guard("weftStreamDestroy", nullptr, [&] {
    // The last owner runs what is queued, then stops the worker.
    api::unregisterStream(stream);
  });
}

}  // extern "C"
