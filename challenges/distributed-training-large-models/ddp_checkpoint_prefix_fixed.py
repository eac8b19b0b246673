import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
torch.manual_seed(0)
path = f"/tmp/checkpoint_{os.environ['MASTER_PORT']}.pt"  # one file per run, shared by both ranks

ddp_model = DDP(nn.Linear(4, 2))
# ... training ...
if rank == 0:
    torch.save(ddp_model.module.state_dict(), path)  # the inner model: no "module." prefix
dist.barrier()                                # nobody reads before it is written

# Later: load it into a plain model, for evaluation on one device
plain = nn.Linear(4, 2)
plain.load_state_dict(torch.load(path))
print(f"rank {rank}: loaded", flush=True)

dist.barrier()
if rank == 0:
    os.remove(path)
dist.destroy_process_group()
