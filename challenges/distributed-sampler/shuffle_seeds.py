import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(100 + rank)  # a different global seed on every rank
dataset = list(range(10))

sampler = DistributedSampler(dataset, shuffle=True)  # seed=0 by default
shard = list(sampler)

shards = [None] * dist.get_world_size()
dist.all_gather_object(shards, shard)
if rank == 0:
    both = shards[0] + shards[1]
    print("overlap:", sorted(set(shards[0]) & set(shards[1])))
    print("covers every sample:", sorted(both) == dataset)

dist.destroy_process_group()
