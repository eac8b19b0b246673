import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
big, acc, raw = DDP(nn.Linear(4, 1)), DDP(nn.Linear(4, 1)), DDP(nn.Linear(4, 1))
for m in (acc, raw):
    m.load_state_dict(big.state_dict())  # three identical models
torch.manual_seed(dist.get_rank())  # each rank reads its own 8 samples
x, y = torch.randn(8, 4), torch.randn(8, 1)
loss_fn = nn.MSELoss()

loss_fn(big(x), y).backward()  # one batch of 8 per rank
for model, scale in ((acc, 2), (raw, 1)):  # two micro-batches of 4
    with model.no_sync():
        (loss_fn(model(x[:4]), y[:4]) / scale).backward()
    (loss_fn(model(x[4:]), y[4:]) / scale).backward()

reference = big.module.weight.grad
print("divided by 2:", torch.allclose(acc.module.weight.grad, reference))
ratio = (raw.module.weight.grad / reference).mean().item()
print(f"not divided: {ratio:.3f} x the big-batch gradient")
dist.destroy_process_group()
