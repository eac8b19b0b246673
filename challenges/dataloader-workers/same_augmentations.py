import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class RandomCrops(Dataset):  # each sample draws a random "crop offset"
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.randint(0, 100, (1,)).item()


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # the same seed on every rank, as most scripts do
loader = DataLoader(RandomCrops(), batch_size=2, num_workers=2)
crops = torch.cat([batch for batch in loader])
gathered = [torch.zeros_like(crops) for _ in range(dist.get_world_size())]
dist.all_gather(gathered, crops)
print(f"random crops identical across ranks: {torch.equal(gathered[0], gathered[1])}")
dist.destroy_process_group()
