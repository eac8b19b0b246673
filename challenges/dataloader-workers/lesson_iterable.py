import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class Stream(IterableDataset):  # a stream of 12 samples, read by every rank
    def __init__(self, rank, world, split_by_worker):
        self.rank, self.world, self.split_by_worker = rank, world, split_by_worker

    def __iter__(self):  # runs in each worker process
        info = get_worker_info()  # None when there are no workers
        workers, worker = (info.num_workers, info.id) if info else (1, 0)
        if not self.split_by_worker:
            return iter(range(self.rank, 12, self.world))  # split by rank only
        start = self.rank * workers + worker
        return iter(range(start, 12, self.world * workers))  # by rank and worker


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
for split in (False, True):
    loader = DataLoader(Stream(rank, world, split), batch_size=None, num_workers=2)
    how = "rank and worker" if split else "rank only"
    print(f"rank {rank}, split by {how}: {[int(x) for x in loader]}")
dist.destroy_process_group()
