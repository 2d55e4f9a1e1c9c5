"""Runs one rank's test body; on failure says which rank and why, then leaves at once.

A graceful exit would first wait (up to the timeout) for the other ranks in every group's
destroy, so a failed rank exits with os._exit(1) after printing its traceback.
"""
import os
import sys
import traceback


def run_rank(main):
    rank = os.environ.get("RANK", "?")
    try:
        main()
    except Exception as e:  # noqa: BLE001 - every failure is reported the same way
        print(f"rank {rank}: FAILED: {e}", flush=True)
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
