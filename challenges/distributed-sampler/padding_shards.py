import torch.distributed as dist
from torch.utils.data import DistributedSampler

SIZE = 10  # samples in the dataset: not a multiple of the rank count

dist.init_process_group("gloo")
dataset = list(range(SIZE))

sampler = DistributedSampler(dataset, shuffle=False, drop_last=False)
shard = (len(sampler), list(sampler))

shards = [None] * dist.get_world_size()
dist.all_gather_object(shards, shard)
if dist.get_rank() == 0:
    for rank, (length, indices) in enumerate(shards):
        print(f"rank {rank}: len={length} {indices}")

dist.destroy_process_group()
