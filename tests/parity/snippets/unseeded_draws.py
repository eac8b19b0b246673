# Unseeded draws from torch's default generator, `random` and numpy's legacy global generator.
# A fresh interpreter seeds each from OS entropy, so under torchrun the values differ per rank
# and per run. Each rank prints its values (masked by the suite) and whether they differ from
# every other rank's (all_gather_object), so the comparison itself stays exact.
import random

import numpy as np
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
draws = {
    "torch": torch.rand(3).tolist(),
    "random": [random.random() for _ in range(3)],
    "numpy": np.random.rand(3).tolist(),
}
gathered: list = [None] * dist.get_world_size()
dist.all_gather_object(gathered, draws)
for name, values in draws.items():
    print(f"{name} values: {values}")
    distinct = {tuple(peer[name]) for peer in gathered}
    print(f"{name} differs on every rank: {len(distinct) == len(gathered)}")
dist.destroy_process_group()
