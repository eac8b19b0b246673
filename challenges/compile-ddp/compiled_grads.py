import copy

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden, self.out = nn.Linear(4, 8), nn.Linear(8, 1)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


net = Net()
eager = DDP(copy.deepcopy(net))
compiled = torch.compile(DDP(copy.deepcopy(net)), backend="aot_eager")
x = torch.full((2, 4), float(rank + 1))  # different data on each rank
eager(x).sum().backward()
compiled(x).sum().backward()
pairs = zip(eager.parameters(), compiled.parameters(), strict=True)
print(f"compiled grads match eager DDP: {all(torch.allclose(a.grad, b.grad) for a, b in pairs)}")
dist.destroy_process_group()
