import torch.distributed as dist
from torch.utils.data import DistributedSampler

dist.init_process_group("gloo")
dataset = list(range(8))
forgot = DistributedSampler(dataset, shuffle=True, seed=0)  # set_epoch never called
fixed = DistributedSampler(dataset, shuffle=True, seed=0)

for epoch in range(3):
    fixed.set_epoch(epoch)  # the shuffle uses seed + epoch
    print(f"epoch {epoch}: forgot {list(forgot)} set_epoch {list(fixed)}")

dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()
