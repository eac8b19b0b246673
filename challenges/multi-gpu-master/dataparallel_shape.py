import torch
import torch.nn as nn

BATCH = 16
FEATURES = 10


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(FEATURES, 5)

    def forward(self, x):
        print("forward sees", tuple(x.shape), flush=True)
        return self.linear(x)


model = nn.DataParallel(SimpleModel())  # a machine with no GPU
print("device_ids", model.device_ids, flush=True)
output = model(torch.randn(BATCH, FEATURES))
print("output", tuple(output.shape), flush=True)
