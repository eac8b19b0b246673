import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(nn.Linear(4, 3))
sent = []


def spy(state, bucket):  # DDP's own all-reduce, after noting the dtype it sends
    sent.append(bucket.buffer().dtype)
    return default_hooks.allreduce_hook(None, bucket)


model.register_comm_hook(None, spy)
with torch.autocast("cpu", dtype=torch.bfloat16):  # forward and loss inside
    logits = model(torch.randn(2, 4))
    loss = nn.functional.cross_entropy(logits, torch.tensor([0, 2]))
loss.backward()  # outside
w = model.module.weight
print(f"logits {logits.dtype}, loss {loss.dtype}")
print(f"weight {w.dtype}, grad {w.grad.dtype}, all-reduced {sent}")
dist.destroy_process_group()
