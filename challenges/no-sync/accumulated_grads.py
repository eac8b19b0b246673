import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
layer = nn.Linear(1, 1, bias=False)
with torch.no_grad():
    layer.weight.fill_(1.0)
model = DDP(layer)

# rank r's micro-batches are x = START + 2r then START + 2r + 1.
# The loss is w * x, so each backward adds x to the local gradient.
START = 1.0
micro_batches = [torch.tensor([[START + 2 * rank]]), torch.tensor([[START + 2 * rank + 1]])]

with model.no_sync():
    model(micro_batches[0]).sum().backward()
print(f"rank {rank} after micro-batch 0: {layer.weight.grad.item()}")
model(micro_batches[1]).sum().backward()  # outside no_sync: synced
print(f"rank {rank} after micro-batch 1: {layer.weight.grad.item()}")
dist.destroy_process_group()
