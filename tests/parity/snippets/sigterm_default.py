# When a rank fails, torchrun stops the others with SIGTERM: a rank with no handler for it ends
# with exit code -15 (torchrun's failure summary: "exitcode: -15"), not -9. Rank 1 fails while
# rank 0 sleeps outside any collective.
import time

import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
print(f"rank {rank} ready", flush=True)
if rank == 1:
    time.sleep(0.5)  # rank 0 is asleep by now
    raise RuntimeError("rank 1 fails")
time.sleep(20)
print("never printed")
