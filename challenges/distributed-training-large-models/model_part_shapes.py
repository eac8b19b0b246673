import torch.nn as nn
import torch.distributed as dist


class BigModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.part1 = nn.Linear(1000, 10000)
        self.part2 = nn.Linear(10000, 1000)

    def forward(self, x):
        x = self.part1(x)
        x = self.part2(x)
        return x


dist.init_process_group("gloo")  # launched with 2 ranks
rank = dist.get_rank()
model = BigModel()

if rank == 0:
    print(f"Rank {rank} model part1 weight shape: {model.part1.weight.shape}")
else:
    print(f"Rank {rank} model part2 weight shape: {model.part2.weight.shape}")

dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()
