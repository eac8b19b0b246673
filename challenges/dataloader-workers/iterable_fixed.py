import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Shard(IterableDataset):  # this rank's share of 8 samples, split again per worker
    def __iter__(self):
        info = get_worker_info()
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        world, rank = dist.get_world_size(), dist.get_rank()
        return iter(range(rank * workers + worker, 8, world * workers))


dist.init_process_group("gloo")
torch.manual_seed(0)
loader = DataLoader(Shard(), batch_size=None, num_workers=2)
print(f"rank {dist.get_rank()} saw {[int(x) for x in loader]}")
dist.destroy_process_group()
