import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")  # launched with 3 ranks
dataset = list(range(7))

sampler = DistributedSampler(dataset, shuffle=False, drop_last=False)
shard = (len(sampler), list(sampler))

shards = [None] * dist.get_world_size()
dist.all_gather_object(shards, shard)
if dist.get_rank() == 0:
    for rank, (length, indices) in enumerate(shards):
        print(f"rank {rank}: len={length} {indices}")

dist.destroy_process_group()
