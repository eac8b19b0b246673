import io

import torch
import torch.nn as nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

# Training side: the model was wrapped, so every key starts with "module.".
checkpoint = io.BytesIO()  # stands in for 'model.pth'
torch.save(nn.DataParallel(nn.Linear(10, 5)).state_dict(), checkpoint)

# Inference side: strip the prefix, then load into a plain model.
checkpoint.seek(0)
state = torch.load(checkpoint)
consume_prefix_in_state_dict_if_present(state, "module.")  # edits `state` in place
plain_model = nn.Linear(10, 5)
print(plain_model.load_state_dict(state), flush=True)
