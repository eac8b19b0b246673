import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.tensor([[0.0], [4.0]]) + 10.0 * rank  # rank 0: [0, 4]; rank 1: [10, 14]

model = DDP(nn.BatchNorm1d(1))  # training mode; weight 1, bias 0 at the start
own = model(x).flatten().tolist()

# For comparison: the same layer on all 4 samples at once, as one process would see them.
batches = [torch.zeros(2, 1) for _ in range(dist.get_world_size())]
dist.all_gather(batches, x)
whole = nn.BatchNorm1d(1)(torch.cat(batches))[2 * rank : 2 * rank + 2].flatten().tolist()

own, whole = [round(v, 2) for v in own], [round(v, 2) for v in whole]
print(f"rank {rank}: DDP {own}, one batch of 4 {whole}")
dist.destroy_process_group()
