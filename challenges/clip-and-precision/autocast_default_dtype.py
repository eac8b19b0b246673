import torch

torch.manual_seed(0)
with torch.autocast("cpu"):  # no dtype given
    out = torch.nn.Linear(2, 2)(torch.ones(1, 2))
print(f"cpu autocast default: {out.dtype}")
