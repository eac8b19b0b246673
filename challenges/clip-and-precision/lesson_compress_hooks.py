import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)  # nn.Linear draws its initial weight, overwritten below
x = torch.tensor([[0.1]]) if rank == 0 else torch.tensor([[0.2]])  # loss w * x: grad is x

for hook in (None, default_hooks.fp16_compress_hook, default_hooks.bf16_compress_hook):
    name = hook.__name__ if hook else "default all-reduce"
    model = DDP(nn.Linear(1, 1, bias=False))
    try:
        if hook:
            model.register_comm_hook(dist.group.WORLD, hook)
        model(x).sum().backward()
        grad = model.module.weight.grad
        print(f"{name}: grad {grad.item():.8f} {grad.dtype}")
    except TypeError as error:
        # Caught so that every rank reports it and the run goes on: left uncaught, the first
        # rank to exit has torchrun stop the other, often before that one can report it.
        print(f"{name}: TypeError: {error}")
dist.destroy_process_group()
