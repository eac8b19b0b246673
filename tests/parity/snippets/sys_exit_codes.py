# Exit codes per rank: rank 0 returns (exit code 0), rank 1 calls sys.exit(3): a failure with
# no traceback. Rank 1 waits 1 s first so that rank 0 has surely finished before the launcher
# reacts to the failure (torchrun stops every surviving worker at once).
import os
import sys
import time

rank = int(os.environ["RANK"])
print(f"rank {rank} starts")
if rank == 1:
    time.sleep(1.0)
    sys.exit(3)
print(f"rank {rank} returns")
