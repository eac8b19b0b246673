import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Seeds(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        info = get_worker_info()
        return -1 if info is None else info.seed


dist.init_process_group("gloo")
torch.manual_seed(0)
main = [int(s) for s in DataLoader(Seeds(), batch_size=None, num_workers=0)]
torch.manual_seed(0)
seeds = [int(s) for s in DataLoader(Seeds(), batch_size=None, num_workers=2)]
print(f"num_workers=0: {main}; num_workers=2: difference {seeds[1] - seeds[0]}")
dist.destroy_process_group()
