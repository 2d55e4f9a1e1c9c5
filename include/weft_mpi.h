/*
 * weft_mpi: create a weft communicator from an MPI communicator (libweft_mpi, built when MPI is
 * found). The unique id travels with MPI_Bcast, so an MPI program needs no launcher variables
 * and no rendezvous of its own:
 *
 *   MPI_Init(&argc, &argv);
 *   weftComm_t comm;
 *   weftCommInitFromMPI(MPI_COMM_WORLD, &comm, NULL);   // same ranks, same order
 *
 * Link with -lweft_mpi -lweft and MPI (find_package(weft_mpi): target weft::weft_mpi). The
 * library is built against one MPI (the one CMake found: Open MPI on Debian); an MPI_Comm of
 * another MPI implementation is not compatible with it.
 *
 * The header compiles as C99 and as C++.
 */
#ifndef WEFT_MPI_H_
#define WEFT_MPI_H_

#include <mpi.h>

#include "weft.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective over `comm` (an intracommunicator): every process of it calls this, and each gets
 * the weft communicator whose rank and size equal its MPI rank and size. Rank 0 makes the unique
 * id (weftGetUniqueId) and broadcasts it, with its outcome, so that a failure there fails every
 * rank instead of hanging them. config may be NULL (defaults, as for weftCommInitRankConfig).
 *
 * Returns what weftCommInitRankConfig returns, and also:
 *   weftInvalidUsage    MPI is not initialised (or already finalised), comm is MPI_COMM_NULL
 *                       or an intercommunicator;
 *   weftInvalidArgument newcomm is NULL;
 *   weftSystemError     an MPI call returned an error (comm's error handler lets it return);
 *   rank 0's failure    on every rank, when weftGetUniqueId failed on rank 0 (its message is in
 *                       weftGetLastError(NULL) on rank 0).
 * Other failures leave their message in weftGetLastError(NULL), as weftCommInitRankConfig does. */
weftResult_t weftCommInitFromMPI(MPI_Comm comm, weftComm_t* newcomm, weftConfig_t* config);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* WEFT_MPI_H_ */
