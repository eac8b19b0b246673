import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

ROWS = [1.0, 2.0, 3.0, 4.0]  # the whole batch
SPLIT = 1  # rows rank 0 gets in the uneven split; rank 1 gets the rest

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


equal = ddp_grad([ROWS[:2], ROWS[2:]][rank])  # 2 rows on each rank
uneven = ddp_grad([ROWS[:SPLIT], ROWS[SPLIT:]][rank])

# The same loss computed by one plain model on the whole batch of 4 rows.
plain = nn.Linear(1, 1, bias=False)
plain(torch.tensor(ROWS).unsqueeze(1)).mean().backward()
full = plain.weight.grad.item()

print(f"equal {equal} uneven {uneven} full batch {full}", flush=True)
dist.destroy_process_group()
