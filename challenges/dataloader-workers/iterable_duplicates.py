import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset

SIZE = 8  # samples in the whole dataset
WORKERS = 2  # loader worker processes per rank


class Shard(IterableDataset):  # this rank's share of SIZE samples
    def __iter__(self):
        return iter(range(dist.get_rank(), SIZE, dist.get_world_size()))


dist.init_process_group("gloo")
torch.manual_seed(0)
loader = DataLoader(Shard(), batch_size=None, num_workers=WORKERS)
print(f"rank {dist.get_rank()} saw {[int(x) for x in loader]}")
dist.destroy_process_group()
