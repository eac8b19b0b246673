import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # same initial weight everywhere (the gradients below do not depend on it)

model = nn.Linear(1, 1, bias=False)
ddp_model = DDP(model)


def ddp_grad(rows):
    """Weight gradient after one DDP backward of loss = mean(w * x) over this rank's rows."""
    model.weight.grad = None
    ddp_model(torch.tensor(rows).unsqueeze(1)).mean().backward()
    return model.weight.grad.item()


equal = ddp_grad([[2.0, 4.0], [6.0, 8.0]][rank])   # rank 0: 2 rows, rank 1: 2 rows
uneven = ddp_grad([[2.0], [4.0, 6.0, 8.0]][rank])  # rank 0: 1 row,  rank 1: 3 rows

# The same loss computed by one plain model on the whole batch of 4 rows.
plain = nn.Linear(1, 1, bias=False)
plain(torch.tensor([[2.0], [4.0], [6.0], [8.0]])).mean().backward()
full = plain.weight.grad.item()

print(f"equal {equal} uneven {uneven} full batch {full}", flush=True)
dist.destroy_process_group()
