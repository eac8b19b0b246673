import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

SEED = 0  # the sampler's seed

dist.init_process_group("gloo")
torch.manual_seed(0)
data = list(range(8))
sampler = DistributedSampler(data, shuffle=True, seed=SEED)
loader = DataLoader(data, batch_size=4, sampler=sampler, num_workers=2, persistent_workers=True)
for epoch in range(2):
    sampler.set_epoch(epoch)
    seen = [int(x) for batch in loader for x in batch]
    print(f"rank {dist.get_rank()} epoch {epoch}: {seen}")
dist.destroy_process_group()
