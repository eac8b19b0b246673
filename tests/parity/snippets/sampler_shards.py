# DistributedSampler: interleaved shards without shuffle; with shuffle the order depends on the
# seed and the epoch, so without set_epoch every epoch repeats the same order; uneven datasets
# are padded by repeating indices, or cut with drop_last. No process group is needed.
import os

from torch.utils.data import DistributedSampler

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
data = range(10)
print("no shuffle:", list(DistributedSampler(data, world, rank, shuffle=False)))
sampler = DistributedSampler(data, world, rank, shuffle=True)
print("shuffle, epoch 0:", list(sampler))
print("shuffle, epoch 1 without set_epoch:", list(sampler))
sampler.set_epoch(1)
print("shuffle, after set_epoch(1):", list(sampler))
print("seed=7:", list(DistributedSampler(data, world, rank, shuffle=True, seed=7)))
print("11 items, padded:", list(DistributedSampler(range(11), world, rank, shuffle=False)))
print(
    "11 items, drop_last:",
    list(DistributedSampler(range(11), world, rank, shuffle=False, drop_last=True)),
)
