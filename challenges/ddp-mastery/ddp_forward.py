import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def forward(self, x):
        return self.linear(x)


dist.init_process_group("gloo")  # env:// rendezvous, as torchrun sets it up
torch.manual_seed(0)             # same initial weights on every rank

model = SimpleModel()            # stays on the CPU: gloo, no device_ids
ddp_model = DDP(model)
input_tensor = torch.tensor([[1.0, 2.0]])
output = ddp_model(input_tensor)
print(output)

dist.destroy_process_group()
