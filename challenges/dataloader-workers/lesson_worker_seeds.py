import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class RandomShift(Dataset):  # each sample draws a random "augmentation"
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.randint(0, 100, (1,)).item()


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # the same seed on every rank, as most scripts do
same = DataLoader(RandomShift(), batch_size=2, num_workers=2)
own = DataLoader(
    RandomShift(),
    batch_size=2,
    num_workers=2,
    generator=torch.Generator().manual_seed(1000 + rank),  # a seed of this rank's own
)
for name, loader in (("same seed", same), ("own generator", own)):
    print(f"rank {rank}, {name}: {torch.cat(list(loader)).tolist()}")
dist.destroy_process_group()
