import torch
import torch.nn as nn
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
SEED = 5

torch.manual_seed(SEED)         # model: same seed on every rank
model = nn.Linear(2, 1)
torch.manual_seed(SEED + rank)  # augmentation: a different stream per rank
noise = torch.randint(0, 100, (3,))

print(f"rank {rank}: bias {model.bias.item():.4f} noise {noise.tolist()}")
dist.barrier()  # let every rank finish connecting before any rank tears down
dist.destroy_process_group()
