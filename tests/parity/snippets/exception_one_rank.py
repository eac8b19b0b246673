# An exception on one rank only: rank 1 raises, rank 0 prints and returns. Rank 1 waits 1 s
# first so that rank 0 has surely finished before the launcher stops the job (the point is
# each rank's own outcome, not a race with torchrun's failure handling).
import os
import time

rank = int(os.environ["RANK"])
if rank == 1:
    time.sleep(1.0)
    raise ValueError(f"bad shard on rank {rank}")
print(f"rank {rank} is fine")
