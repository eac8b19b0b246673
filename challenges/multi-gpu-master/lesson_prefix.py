import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x)


dist.init_process_group("gloo")
torch.manual_seed(0)
ddp_model = DDP(Net())

if dist.get_rank() == 0:  # every replica is the same: one rank is enough to save
    print("wrapper:", list(ddp_model.state_dict()), flush=True)
    print("module: ", list(ddp_model.module.state_dict()), flush=True)
    plain = Net()  # the model you load later for inference, with no DDP around it
    print(plain.load_state_dict(ddp_model.module.state_dict()), flush=True)
dist.destroy_process_group()
