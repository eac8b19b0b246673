import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()

dataset = list(range(8))
# "Seed every rank differently", applied to the sampler too:
sampler = DistributedSampler(dataset, shuffle=True, seed=rank)
print(f"rank {rank}: {list(sampler)}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()
