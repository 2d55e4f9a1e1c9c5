#!/bin/sh
# as_launcher.sh <slurm|pmix> program [args...]: run under mpirun, it turns Open MPI's variables
# into another launcher's while mpirun's PMIx server stays, so that tests can play
#   slurm  srun --mpi=pmix: SLURM_PROCID, SLURM_NTASKS, ... and PMIX_RANK/PMIX_NAMESPACE
#   pmix   a bare PMIx launcher: only PMIX_RANK/PMIX_NAMESPACE (the size comes from PMIx)
set -eu
style=$1
shift
rank=$OMPI_COMM_WORLD_RANK
size=$OMPI_COMM_WORLD_SIZE
local_rank=$OMPI_COMM_WORLD_LOCAL_RANK
for name in $(env | sed -n 's/^\(OMPI_COMM_WORLD_[A-Z_]*\)=.*/\1/p'); do unset "$name"; done
case $style in
  slurm)
    export SLURM_PROCID="$rank" SLURM_NTASKS="$size" SLURM_STEP_NUM_TASKS="$size" \
      SLURM_LOCALID="$local_rank" SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE="$size" SLURM_STEP_ID=0
    ;;
  pmix) ;;
  *) echo "as_launcher.sh: unknown style $style" >&2; exit 2 ;;
esac
exec "$@"
