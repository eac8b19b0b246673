import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")  # launched with 2 ranks
torch.manual_seed(0)


def count_graphs(wrap):
    """Graphs dynamo hands a counting "compiler" during one training step of the wrapped model."""
    graphs = []

    def counting_backend(gm, example_inputs):  # records each graph and runs it as is
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    layers = nn.Sequential(*(nn.Linear(512, 512) for _ in range(4)))  # 1 MiB of weights each
    model = wrap(layers, counting_backend)
    model(torch.randn(2, 512)).sum().backward()
    return len(graphs)


outside = count_graphs(lambda seq, b: torch.compile(DDP(seq, bucket_cap_mb=1), backend=b))
inside = count_graphs(lambda seq, b: DDP(torch.compile(seq, backend=b), bucket_cap_mb=1))
print(f"compile(DDP(Sequential)): {outside} graphs")
print(f"DDP(compile(Sequential)): {inside} graphs")
dist.destroy_process_group()
