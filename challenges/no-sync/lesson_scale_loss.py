import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
big, acc, raw = DDP(nn.Linear(4, 1)), DDP(nn.Linear(4, 1)), DDP(nn.Linear(4, 1))
for m in (acc, raw):
    m.load_state_dict(big.state_dict())  # three identical models
torch.manual_seed(dist.get_rank())  # each rank reads its own 12 samples
x, y = torch.randn(12, 4), torch.randn(12, 1)
loss_fn = nn.MSELoss()  # a mean over the batch

loss_fn(big(x), y).backward()  # one batch of 12 per rank
accum = 3
for model, scale in ((acc, accum), (raw, 1)):  # three micro-batches of 4
    for i in range(accum):
        xs, ys = x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4]
        if i < accum - 1:
            with model.no_sync():
                (loss_fn(model(xs), ys) / scale).backward()
        else:
            (loss_fn(model(xs), ys) / scale).backward()

reference = big.module.weight.grad
print("loss / 3:", torch.allclose(acc.module.weight.grad, reference))
ratio = (raw.module.weight.grad / reference).mean().item()
print(f"loss as is: {ratio:.2f} x the one-batch gradient")
dist.destroy_process_group()
