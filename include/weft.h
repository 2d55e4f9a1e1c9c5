/*
 * weft: a collective communication runtime for distributed machine learning.
 *
 * The C API has NCCL's shape with the `weft` prefix: the same functions, argument orders and
 * enum values, so a framework's NCCL integration maps onto weft one to one. Buffers are host
 * memory. Every function returns a weftResult_t; weftGetLastError() says what went wrong.
 *
 * The header compiles as C99 and as C++.
 */
#ifndef WEFT_H_
#define WEFT_H_

#include <limits.h>
#include <stddef.h>

#define WEFT_MAJOR 0
#define WEFT_MINOR 1
#define WEFT_PATCH 0
#define WEFT_VERSION(X, Y, Z) ((X) * 10000 + (Y) * 100 + (Z))
#define WEFT_VERSION_CODE WEFT_VERSION(WEFT_MAJOR, WEFT_MINOR, WEFT_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. */
typedef struct weftComm* weftComm_t;
#define WEFT_COMM_NULL NULL

/* A host stream: an ordered queue of operations run by a worker thread. A NULL stream means
 * the call returns when the operation is complete. */
typedef struct weftStream* weftStream_t;

#define WEFT_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[WEFT_UNIQUE_ID_BYTES];
} weftUniqueId;

/* In C++ the enums below are int-based (as they are in C), so that any int a caller passes
 * is a value of the type: weft can then reject it with weftInvalidArgument. */
#ifdef __cplusplus
#define WEFT_INT_ENUM : int
#else
#define WEFT_INT_ENUM
#endif

/* Result codes (values equal NCCL's). */
typedef enum WEFT_INT_ENUM {
  weftSuccess = 0,
  weftUnhandledCudaError = 1,
  weftSystemError = 2,
  weftInternalError = 3,
  weftInvalidArgument = 4,
  weftInvalidUsage = 5,
  weftRemoteError = 6,
  weftInProgress = 7,
  weftTimeout = 8,
  weftNumResults = 9
} weftResult_t;

/* Reduction operations (values equal NCCL's). Operators made by weftRedOpCreatePreMulSum take
 * values from weftNumOps upward. */
typedef enum { weftNumOps_dummy = 5 } weftRedOp_dummy_t;
typedef enum WEFT_INT_ENUM {
  weftSum = 0,
  weftProd = 1,
  weftMax = 2,
  weftMin = 3,
  weftAvg = 4,
  weftNumOps = 5,
  weftMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(weftRedOp_dummy_t))
} weftRedOp_t;

/* Data types (values equal NCCL's). */
typedef enum WEFT_INT_ENUM {
  weftInt8 = 0,
  weftChar = 0,
  weftUint8 = 1,
  weftInt32 = 2,
  weftInt = 2,
  weftUint32 = 3,
  weftInt64 = 4,
  weftUint64 = 5,
  weftFloat16 = 6,
  weftHalf = 6,
  weftFloat32 = 7,
  weftFloat = 7,
  weftFloat64 = 8,
  weftDouble = 8,
  weftBfloat16 = 9,
  weftFloat8e4m3 = 10,
  weftFloat8e5m2 = 11,
  weftNumTypes = 12
} weftDataType_t;

/* Where the scalar of a pre-multiplied sum lives. Device: the pointer is dereferenced each time
 * a collective uses the operator. HostImmediate: the value is read before the create call
 * returns. */
typedef enum WEFT_INT_ENUM {
  weftScalarDevice = 0,
  weftScalarHostImmediate = 1
} weftScalarResidence_t;

/* Communicator configuration. Always start from WEFT_CONFIG_INITIALIZER; fields left at
 * WEFT_CONFIG_UNDEF_INT / WEFT_CONFIG_UNDEF_PTR take their defaults. */
#define WEFT_CONFIG_UNDEF_INT INT_MIN
#define WEFT_CONFIG_UNDEF_PTR NULL
typedef struct weftConfig_v1 {
  /* Set by WEFT_CONFIG_INITIALIZER; never touch. */
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* 1 (default): init and operations return when done. 0: init returns weftInProgress and
   * completes in the background; poll weftCommGetAsyncError until it is no longer
   * weftInProgress. */
  int blocking;
  /* Deadline of every wait on this communicator, in milliseconds (default WEFT_TIMEOUT_MS). */
  int timeoutMs;
  /* Name shown in log lines. */
  const char* commName;
  /* Inter-process transport: "ucx" (the default and, for now, the only one). */
  const char* netName;
  /* 1: children of weftCommSplit share the parent's UCX worker and endpoints instead of
   * connecting anew (NCCL's splitShare); 0 (default): each child sets up its own. Read from the
   * config given to weftCommSplit, or the parent's when that is NULL. Each sharing child has
   * its own context id in the UCX tag, and the worker lives until the last communicator on it
   * is destroyed, parent or child. A child that must reach a rank the parent's UCX does not
   * (itself, when the parent uses UCX only for other hosts) sets up its own. */
  int splitShare;
} weftConfig_t;

#define WEFT_CONFIG_MAGIC 0x77656674u /* "weft" */
#define WEFT_CONFIG_INITIALIZER                                                            \
  {                                                                                        \
    sizeof(weftConfig_t), WEFT_CONFIG_MAGIC, WEFT_VERSION_CODE, WEFT_CONFIG_UNDEF_INT,     \
        WEFT_CONFIG_UNDEF_INT, WEFT_CONFIG_UNDEF_PTR, WEFT_CONFIG_UNDEF_PTR,               \
        WEFT_CONFIG_UNDEF_INT                                                              \
  }

/* Errors and version. */
weftResult_t weftGetVersion(int* version);
const char* weftGetErrorString(weftResult_t result);
/* The message of the last failure on this communicator (comm may be NULL: the last failure in
 * this thread). Never NULL; "" when nothing failed. The string is the calling thread's and stays
 * valid until its next weft call. */
const char* weftGetLastError(weftComm_t comm);

/* Communicators. */
weftResult_t weftGetUniqueId(weftUniqueId* uniqueId);
weftResult_t weftCommInitRank(weftComm_t* comm, int nranks, weftUniqueId commId, int rank);
weftResult_t weftCommInitRankConfig(weftComm_t* comm, int nranks, weftUniqueId commId, int rank,
                                    weftConfig_t* config);
/* nranks communicators in this process, one per rank; drive them from one thread per rank or
 * from one thread inside weftGroupStart/weftGroupEnd. One thread may also finalize or destroy
 * them one after another: each waits for its own operations, and the last to go releases them
 * all. devlist must be NULL (host ranks have no devices). */
weftResult_t weftCommInitAll(weftComm_t* comms, int nranks, const int* devlist);
/* Rank, size and rendezvous from the launcher's environment (weftrun). config may be NULL. */
weftResult_t weftCommInitFromEnv(weftComm_t* comm, weftConfig_t* config);
/* Split: collective over comm. Ranks passing the same color form a new communicator, ranked by
 * (key, rank in comm); WEFT_SPLIT_NOCOLOR takes part and gets *newcomm = NULL. config NULL:
 * the parent's configuration. */
#define WEFT_SPLIT_NOCOLOR -1
weftResult_t weftCommSplit(weftComm_t comm, int color, int key, weftComm_t* newcomm,
                           weftConfig_t* config);
/* Shrink: called by every rank of comm not in excludeRanksList (typically ranks that died);
 * they form a new communicator in comm's rank order. Works on a communicator that failed.
 * WEFT_SHRINK_DEFAULT: no operation may be running on comm. WEFT_SHRINK_ABORT: operations
 * still running on comm are stopped first (comm is then aborted). */
#define WEFT_SHRINK_DEFAULT 0x00
#define WEFT_SHRINK_ABORT 0x01
weftResult_t weftCommShrink(weftComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            weftComm_t* newcomm, weftConfig_t* config, int shrinkFlags);
weftResult_t weftCommFinalize(weftComm_t comm);
weftResult_t weftCommDestroy(weftComm_t comm);
weftResult_t weftCommAbort(weftComm_t comm);
weftResult_t weftCommGetAsyncError(weftComm_t comm, weftResult_t* asyncError);
weftResult_t weftCommCount(const weftComm_t comm, int* count);
weftResult_t weftCommUserRank(const weftComm_t comm, int* rank);

/* Memory. weftMemAlloc returns host memory that every rank of the host maps: collectives whose
 * buffers all come from it read peers' buffers in place, with no staging copy (true zero copy
 * between processes). weftMemFree releases it. */
weftResult_t weftMemAlloc(void** ptr, size_t size);
weftResult_t weftMemFree(void* ptr);
/* Registers [buff, buff + size), which must lie in memory from weftMemAlloc, for use with comm
 * (optional, as NCCL's user-buffer registration): weftMemFree refuses the memory until every
 * registration of it is undone with weftCommDeregister. */
weftResult_t weftCommRegister(const weftComm_t comm, void* buff, size_t size, void** handle);
weftResult_t weftCommDeregister(const weftComm_t comm, void* handle);

/* Reduction operators. */
weftResult_t weftRedOpCreatePreMulSum(weftRedOp_t* op, void* scalar, weftDataType_t datatype,
                                      weftScalarResidence_t residence, weftComm_t comm);
weftResult_t weftRedOpDestroy(weftRedOp_t op, weftComm_t comm);

/* Collectives (argument orders equal NCCL's). */
weftResult_t weftAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                           weftStream_t stream);
weftResult_t weftBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           weftDataType_t datatype, int root, weftComm_t comm,
                           weftStream_t stream);
weftResult_t weftReduce(const void* sendbuff, void* recvbuff, size_t count,
                        weftDataType_t datatype, weftRedOp_t op, int root, weftComm_t comm,
                        weftStream_t stream);
weftResult_t weftAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           weftDataType_t datatype, weftComm_t comm, weftStream_t stream);
weftResult_t weftReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               weftDataType_t datatype, weftRedOp_t op, weftComm_t comm,
                               weftStream_t stream);
weftResult_t weftAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          weftDataType_t datatype, weftComm_t comm, weftStream_t stream);
weftResult_t weftGather(const void* sendbuff, void* recvbuff, size_t count,
                        weftDataType_t datatype, int root, weftComm_t comm, weftStream_t stream);
weftResult_t weftScatter(const void* sendbuff, void* recvbuff, size_t count,
                         weftDataType_t datatype, int root, weftComm_t comm, weftStream_t stream);

/* Point to point. Sends from one rank to another are received in the order they were sent.
 * Matched sends and receives inside weftGroupStart/weftGroupEnd never deadlock. Inside one
 * group a receive buffer may not overlap any other send or receive buffer of the group
 * (weftGroupEnd returns weftInvalidUsage). */
weftResult_t weftSend(const void* sendbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftStream_t stream);
weftResult_t weftRecv(void* recvbuff, size_t count, weftDataType_t datatype, int peer,
                      weftComm_t comm, weftStream_t stream);

/* Groups: operations between weftGroupStart and weftGroupEnd are started together at
 * weftGroupEnd. Groups nest; the outermost weftGroupEnd launches. */
weftResult_t weftGroupStart(void);
weftResult_t weftGroupEnd(void);

/* Host streams. */
weftResult_t weftStreamCreate(weftStream_t* stream);
/* Waits until every operation enqueued so far has finished; returns the first error among them
 * (and then forgets it). */
weftResult_t weftStreamSynchronize(weftStream_t stream);
/* weftSuccess when every enqueued operation has finished, weftInProgress otherwise. */
weftResult_t weftStreamQuery(weftStream_t stream);
/* Waits for enqueued work, then frees the stream. */
weftResult_t weftStreamDestroy(weftStream_t stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WEFT_H_ */
