import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()

dataset = list(range(8))
# Every rank must compute the same permutation: one seed for all ranks.
sampler = DistributedSampler(dataset, shuffle=True, seed=0)
print(f"rank {rank}: {list(sampler)}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()
