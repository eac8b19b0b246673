import torch
import torch.distributed as dist

# Started as `python no_torchrun.py`, not with torchrun.
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(t)
dist.destroy_process_group()
