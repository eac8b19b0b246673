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

# rank 0's micro-batches are x = 1 then 2; rank 1's are x = 3 then 4.
# The loss is w * x, so each backward adds x to the local gradient.
micro_batches = [torch.tensor([[1.0 + 2 * rank]]), torch.tensor([[2.0 + 2 * rank]])]

with model.no_sync():
    model(micro_batches[0]).sum().backward()
print(f"rank {rank} after micro-batch 0: {layer.weight.grad.item()}")
model(micro_batches[1]).sum().backward()  # outside no_sync: synced
print(f"rank {rank} after micro-batch 1: {layer.weight.grad.item()}")
dist.destroy_process_group()
