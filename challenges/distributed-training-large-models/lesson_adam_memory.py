import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4))
ddp_model = DDP(model)
optimizer = torch.optim.Adam(ddp_model.parameters())

ddp_model(torch.randn(5, 8)).sum().backward()
optimizer.step()  # Adam creates its state on the first step


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


params = list(model.parameters())
state = [s[k] for s in optimizer.state.values() for k in ("exp_avg", "exp_avg_sq")]
n = sum(p.numel() for p in params)
print(f"{n} parameters; bytes: weights {nbytes(params)}, "
      f"grads {nbytes(p.grad for p in params)}, Adam {nbytes(state)}", flush=True)
dist.destroy_process_group()
