import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

SEED = 0

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(SEED)
if rank == 0:  # only rank 0 runs a quick evaluation pass (no workers, no shuffle)
    for _batch in DataLoader(list(range(4)), batch_size=2):
        pass
noise = torch.rand(1)  # e.g. dropout or a random augmentation in the next step
print(f"rank {rank} draws {noise.item():.4f}")
dist.destroy_process_group()
