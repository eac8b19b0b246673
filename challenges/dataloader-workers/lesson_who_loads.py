import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Numbered(Dataset):  # sample i is just i, with the process id that loaded it
    def __len__(self):
        return 12

    def __getitem__(self, i):
        return i, os.getpid()


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
sampler = DistributedSampler(Numbered(), shuffle=False)  # this rank's share of the 12
loader = DataLoader(Numbered(), batch_size=2, sampler=sampler, num_workers=2)
samples, pids = [], set()
for batch, batch_pids in loader:
    samples += batch.tolist()
    pids.update(batch_pids.tolist())
workers = len(pids - {os.getpid()})  # processes other than this rank's own
print(f"rank {rank}: samples {samples}, loaded by {workers} worker processes")
dist.destroy_process_group()
