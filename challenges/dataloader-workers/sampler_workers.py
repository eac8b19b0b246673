import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

SIZE = 8  # samples in the dataset
WORKERS = 2  # loader worker processes in the second pass

dist.init_process_group("gloo")
torch.manual_seed(0)
data = list(range(SIZE))
sampler = DistributedSampler(data, shuffle=False)
for workers in (0, WORKERS):
    loader = DataLoader(data, batch_size=2, sampler=sampler, num_workers=workers)
    seen = [int(x) for batch in loader for x in batch]
    print(f"rank {dist.get_rank()} num_workers={workers}: {seen}")
dist.destroy_process_group()
