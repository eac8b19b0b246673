import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

dist.init_process_group("gloo")
torch.manual_seed(0)
data = list(range(8))
sampler = DistributedSampler(data, shuffle=False)
for workers in (0, 2):
    loader = DataLoader(data, batch_size=2, sampler=sampler, num_workers=workers)
    seen = [int(x) for batch in loader for x in batch]
    print(f"rank {dist.get_rank()} num_workers={workers}: {seen}")
dist.destroy_process_group()
