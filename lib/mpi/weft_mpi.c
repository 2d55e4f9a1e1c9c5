/* weftCommInitFromMPI: the unique id over MPI_Bcast. Public weft API only. */
#include "weft_mpi.h"

#include <string.h>

/* What rank 0 broadcasts: the outcome of weftGetUniqueId, then the id. */
typedef struct {
  int result;
  weftUniqueId id;
} IdMessage;

weftResult_t weftCommInitFromMPI(MPI_Comm comm, weftComm_t* newcomm, weftConfig_t* config) {
  if (newcomm == NULL) return weftInvalidArgument;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized || comm == MPI_COMM_NULL) return weftInvalidUsage;
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) return weftSystemError;
  if (inter) return weftInvalidUsage;
  int rank = -1, size = 0;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return weftSystemError;

  IdMessage message;
  memset(&message, 0, sizeof message);
  if (rank == 0) message.result = (int)weftGetUniqueId(&message.id);
  if (MPI_Bcast(&message, (int)sizeof message, MPI_BYTE, 0, comm) != MPI_SUCCESS)
    return weftSystemError;
  if (message.result != (int)weftSuccess) return (weftResult_t)message.result;
  return weftCommInitRankConfig(newcomm, size, message.id, rank, config);
}
