import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Pid(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return os.getpid()


dist.init_process_group("gloo")
torch.manual_seed(0)
pids = {int(p) for p in DataLoader(Pid(), batch_size=None, num_workers=2)}
everyone = [None] * dist.get_world_size()
dist.all_gather_object(everyone, (os.getpid(), pids))
mains = {main for main, _ in everyone}
workers = set().union(*(w for _, w in everyone)) - mains
print(f"rank {dist.get_rank()}: {len(mains)} rank processes, {len(workers)} loader workers")
dist.destroy_process_group()
