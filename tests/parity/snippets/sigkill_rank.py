# Rank 1 is killed by a signal (SIGKILL, as the OOM killer would) after a barrier; rank 0 waits
# for it in all_reduce and ends after its peer is gone (gloo's error or its launcher's stop).
import os
import signal

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
dist.barrier()
print(f"rank {rank} passed the barrier", flush=True)
# Both ranks have printed before rank 1 dies: otherwise, on a loaded machine, torchrun's agent
# may stop rank 0 before its line is out, and the reference's output would vary run to run.
dist.barrier()
if rank == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(torch.ones(1))
print("never printed")
