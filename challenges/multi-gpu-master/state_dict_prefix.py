import io

import torch
import torch.nn as nn


class SimpleModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 5)

    def forward(self, x):
        return self.linear(x)


# Training side: the model was wrapped in DataParallel.
model = nn.DataParallel(SimpleModel())
checkpoint = io.BytesIO()  # stands in for 'model.pth'
torch.save(model.state_dict(), checkpoint)

# Inference side: load into a plain, unwrapped model.
checkpoint.seek(0)
plain_model = SimpleModel()
plain_model.load_state_dict(torch.load(checkpoint))
print("loaded")
