import os

import torch
import torch.distributed as dist

# Started as `python no_torchrun_fixed.py`: supply what torchrun would set.
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "0")  # a single rank may let the OS pick a port
os.environ.setdefault("RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")
dist.init_process_group("gloo")
t = torch.ones(1)
dist.all_reduce(t)
print(t)
dist.destroy_process_group()
