import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)  # the DataLoader draws a seed for its iterator

data = TensorDataset(torch.arange(48))  # 48 samples
per_rank_batch = 4
loader = DataLoader(data, batch_size=per_rank_batch, sampler=DistributedSampler(data, shuffle=False))
first = next(iter(loader))[0].tolist()
print(f"rank {rank}: {len(loader)} steps, first batch {first}, global batch {per_rank_batch * world}", flush=True)
dist.destroy_process_group()
