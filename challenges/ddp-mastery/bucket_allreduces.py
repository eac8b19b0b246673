import torch
import torch.nn as nn
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

LAYERS = 4  # Linear(256, 256) layers: about 0.25 MiB of gradients each

dist.init_process_group("gloo")
torch.manual_seed(0)


def allreduces_per_backward(**ddp_kwargs):
    # 256 x 256 weights + 256 biases per layer: 263,168 bytes of float32 gradients
    model = nn.Sequential(*[nn.Linear(256, 256) for _ in range(LAYERS)])
    ddp_model = DDP(model, **ddp_kwargs)
    calls = []

    def counting_hook(state, bucket):  # DDP calls the hook once per bucket it all-reduces
        calls.append(bucket.index())
        return default_hooks.allreduce_hook(None, bucket)  # the usual all-reduce, then / world size

    ddp_model.register_comm_hook(None, counting_hook)
    counts = []
    for step in range(2):
        calls.clear()
        ddp_model(torch.randn(8, 256)).sum().backward()
        counts.append(len(calls))
    return counts


print("default:", allreduces_per_backward(), flush=True)
print("bucket_cap_mb=0.25:", allreduces_per_backward(bucket_cap_mb=0.25), flush=True)
dist.destroy_process_group()
