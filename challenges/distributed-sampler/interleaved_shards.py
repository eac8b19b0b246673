import torch.distributed as dist
from torch.utils.data import DistributedSampler

SIZE = 10  # samples in the dataset

dist.init_process_group("gloo")
dataset = list(range(SIZE))  # any object with __len__ works; the sampler yields indices

sampler = DistributedSampler(dataset, shuffle=False)  # rank and world size from the group
shard = list(sampler)

shards = [None] * dist.get_world_size()
dist.all_gather_object(shards, shard)  # collect every rank's indices on every rank
if dist.get_rank() == 0:
    for rank, indices in enumerate(shards):
        print(f"rank {rank}: {indices}")

dist.destroy_process_group()
