import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()

model = nn.Linear(1, 1, bias=False)
with torch.no_grad():
    model.weight.fill_(1.0)
ddp_model = DDP(model)  # CPU model, gloo: no device_ids

x = torch.tensor([[float(2 * rank + 1)]])  # rank 0 sees 1.0, rank 1 sees 3.0
loss = ddp_model(x).sum()  # d(loss)/d(weight) is x: 1.0 on rank 0, 3.0 on rank 1
loss.backward()
print(f"rank {rank}: grad {model.weight.grad.item()}")
dist.destroy_process_group()
