import torch
import torch.nn as nn


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 5)

    def forward(self, x):
        return self.linear(x)


device = "cuda" if torch.cuda.is_available() else "cpu"

model = nn.DataParallel(SimpleModel()).to(device)  # splits the batch over every visible GPU
input_tensor = torch.randn(16, 10, device=device)
output = model(input_tensor)
print(output.shape)
