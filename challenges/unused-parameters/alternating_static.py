import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class WithAux(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 1)
        self.aux_head = nn.Linear(4, 1)

    def forward(self, x, with_aux):
        h = self.body(x)
        loss = self.head(h).sum()
        return loss + 0.1 * self.aux_head(h).sum() if with_aux else loss


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(WithAux(), static_graph=True)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
WITH_AUX = 1  # the first WITH_AUX steps add the auxiliary loss, the later ones do not
try:
    for step in range(WITH_AUX + 3):
        opt.zero_grad()
        model(torch.randn(8, 4), with_aux=(step < WITH_AUX)).backward()
        opt.step()
        print(f"rank {rank}: step {step} done", flush=True)
except RuntimeError as error:
    # Each rank prints its own error. Left uncaught, the first rank to exit has torchrun stop
    # the other within 0.1 s, often before that one can report its error.
    print(f"rank {rank}: RuntimeError: {error}", flush=True)
dist.destroy_process_group()
