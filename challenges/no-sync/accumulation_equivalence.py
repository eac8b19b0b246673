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

MICRO_BATCHES = 2
loss_fn(big(x), y).backward()  # one batch of 8 per rank
for model, scale in ((acc, MICRO_BATCHES), (raw, 1)):  # micro-batches of 8 // MICRO_BATCHES
    xs, ys = x.chunk(MICRO_BATCHES), y.chunk(MICRO_BATCHES)
    with model.no_sync():
        for i in range(MICRO_BATCHES - 1):
            (loss_fn(model(xs[i]), ys[i]) / scale).backward()
    (loss_fn(model(xs[-1]), ys[-1]) / scale).backward()

reference = big.module.weight.grad
print(f"divided by {MICRO_BATCHES}:", torch.allclose(acc.module.weight.grad, reference))
ratio = (raw.module.weight.grad / reference).mean().item()
print(f"not divided: {ratio:.3f} x the big-batch gradient")
dist.destroy_process_group()
