import torch.distributed as dist
from torch.utils.data import DistributedSampler

SAMPLES = 1000  # the dataset's length

dist.init_process_group("gloo")
sampler = DistributedSampler(range(SAMPLES))  # the defaults: shuffle=True, drop_last=False
print(f"rank {dist.get_rank()}: {len(list(sampler))} samples")
dist.barrier()  # no rank shuts down while a peer is still connecting
dist.destroy_process_group()
