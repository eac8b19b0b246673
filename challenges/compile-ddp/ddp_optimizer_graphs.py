import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
torch.manual_seed(0)
graphs = []


def counting_backend(gm, example_inputs):  # a "compiler" that only counts the graphs it gets
    graphs.append(gm)
    return gm.forward


LAYERS = 4


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(512, 512) for _ in range(LAYERS))  # 1 MiB each

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


model = DDP(Net(), bucket_cap_mb=1)
compiled = torch.compile(model, backend=counting_backend)
print(f"graphs before the first call: {len(graphs)}", flush=True)
compiled(torch.randn(2, 512)).sum().backward()
print(f"graphs after one step: {len(graphs)}")
dist.destroy_process_group()
