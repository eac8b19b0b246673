# The control for unseeded_draws: after manual_seed / random.seed / np.random.seed every rank
# draws the same numbers on every run, and they are the numbers a fresh process draws (the
# executor's ranks must not be left with a generator state that seeding does not reset).
import random

import numpy as np
import torch

torch.manual_seed(0)
random.seed(0)
np.random.seed(0)
print("torch:", [round(x, 6) for x in torch.rand(3).tolist()])
print("torch randn:", [round(x, 6) for x in torch.randn(2).tolist()])
print("random:", [round(random.random(), 6) for _ in range(3)])
print("numpy:", [round(x, 6) for x in np.random.rand(3).tolist()])
print("numpy default_rng(0):", [round(x, 6) for x in np.random.default_rng(0).random(2).tolist()])
print("torch initial_seed:", torch.initial_seed())
