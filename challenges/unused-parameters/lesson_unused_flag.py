import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class PolicyValue(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.policy = nn.Linear(8, 2)
        self.value = nn.Linear(8, 1)

    def forward(self, x, with_value=False):
        h = self.body(x).relu()
        if with_value:  # only evaluation asks for the value head
            return self.policy(h), self.value(h)
        return self.policy(h)


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(PolicyValue(), find_unused_parameters=True)
for step in range(2):
    try:
        model(torch.ones(3, 4)).sum().backward()  # training: the policy head only
        unset = model.module.value.weight.grad is None
        print(f"rank {rank}: step {step} done, value.weight.grad is None: {unset}", flush=True)
    except RuntimeError as error:
        first_sentence = str(error).split(".")[0]
        print(f"rank {rank}: step {step} failed: {first_sentence}", flush=True)
dist.destroy_process_group()
