import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset


class Scaled(Dataset):
    scale = 1

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return i * self.scale


dist.init_process_group("gloo")
torch.manual_seed(0)
data = Scaled()
loader = DataLoader(data, batch_size=None, num_workers=1, persistent_workers=True)
for epoch in range(2):
    print(f"rank {dist.get_rank()} epoch {epoch}: {[int(x) for x in loader]}")
    data.scale = 10  # changed in the main process after the workers started
dist.destroy_process_group()
