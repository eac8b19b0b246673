import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
bn = nn.BatchNorm1d(1)  # running_mean starts at 0; momentum 0.1
model = DDP(bn)  # default settings
batch = torch.full((4, 1), 10.0 + 20.0 * rank)  # rank 0 sees 10s, rank 1 sees 30s

means = []
for _step in range(2):  # two training-mode forwards that build no graph
    with torch.no_grad():
        model(batch)
    means.append(bn.running_mean.item())
print(f"rank {rank}: running_mean after step 1 {means[0]:.2f}, after step 2 {means[1]:.2f}")
dist.destroy_process_group()
