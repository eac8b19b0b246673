import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


DEPTH = 1  # Linear layers in the body


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(*(nn.Linear(4, 4) for _ in range(DEPTH)))
        self.main_head = nn.Linear(4, 1)
        self.aux_head = nn.Linear(4, 1)  # defined, but not used in forward

    def forward(self, x):
        return self.main_head(self.body(x))


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(TwoHeads())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    for step in range(2):
        opt.zero_grad()
        model(torch.randn(8, 4)).sum().backward()
        opt.step()
        print(f"rank {rank}: step {step} done", flush=True)
except RuntimeError as error:
    # Each rank prints its own error. Left uncaught, the first rank to exit has torchrun stop
    # the other within 0.1 s, often before that one can report its error.
    print(f"rank {rank}: RuntimeError: {error}", flush=True)
dist.destroy_process_group()
