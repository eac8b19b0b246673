import torch
import torch.nn as nn
import torch.distributed as dist

dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
torch.manual_seed(0)

if rank == 0:
    stage = nn.Sequential(nn.Linear(8, 6), nn.ReLU())
    x = torch.randn(3, 8)
    h = stage(x)
    print(f"rank 0 sends {tuple(h.shape)}", flush=True)
    dist.send(h.detach(), dst=1)
else:
    stage = nn.Linear(6, 4)
    h = torch.empty(3, 6)            # the shape rank 0 sends
    dist.recv(h, src=0)
    print(f"rank 1 output {tuple(stage(h).shape)}", flush=True)

dist.barrier()
dist.destroy_process_group()
