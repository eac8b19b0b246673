import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)
graphs = []


def counting_backend(gm, example_inputs):  # a "compiler" that records each graph and runs it as is
    graphs.append(gm)
    return gm.forward


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(512, 512) for _ in range(3))  # 1 MiB of weights each

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


net = Net()
model = torch.compile(DDP(net, bucket_cap_mb=1), backend=counting_backend)
print(" -> ".join(type(m).__name__ for m in (model, model._orig_mod, model._orig_mod.module)))
print(f"innermost is net: {model._orig_mod.module is net}")
print(f"optimize_ddp: {torch._dynamo.config.optimize_ddp}, bucket cap: {model._orig_mod.bucket_bytes_cap} bytes")
print(f"after torch.compile: {len(graphs)} graphs", flush=True)
for step in (1, 2):
    model(torch.randn(2, 512)).sum().backward()
    print(f"after step {step}: {len(graphs)} graphs", flush=True)
dist.destroy_process_group()
