#!/bin/sh
# with-rank-env.sh RANK NAME=VALUE COMMAND [ARGS...]: runs COMMAND with NAME=VALUE set only on
# local rank RANK (WEFT_LOCAL_RANK, which weftrun sets), for tests of ranks started with
# different settings.
rank=$1
setting=$2
shift 2
if [ "$WEFT_LOCAL_RANK" = "$rank" ]; then export "$setting"; fi
exec "$@"
