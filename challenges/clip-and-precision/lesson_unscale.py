import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)  # nn.Linear draws its initial weight, overwritten below
for unscale_first in (False, True):
    model = DDP(nn.Linear(1, 1, bias=False))
    with torch.no_grad():
        model.module.weight.fill_(0.0)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler("cpu")  # starts at scale 65536
    loss = model(torch.tensor([[4.0]])).sum()  # the gradient is 4.0 on every rank
    scaler.scale(loss).backward()  # .grad holds 4.0 * 65536
    if unscale_first:
        scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)  # meant: clip to 0.5
    scaler.step(opt)  # unscales first if unscale_ was not called
    scaler.update()
    order = "unscale_ then clip" if unscale_first else "clip, no unscale_"
    print(f"{order}: weight moved by {-model.module.weight.item():.6f}")
dist.destroy_process_group()
