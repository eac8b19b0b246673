# The whole environment a rank starts with, as one JSON line. The suite subtracts the
# environment the launch started from to get the names the launcher adds, and compares values
# where they do not vary from run to run.
import json
import os

error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
print(
    json.dumps(
        {
            "environ": dict(os.environ),
            "error_file_folder_exists": bool(error_file)
            and os.path.isdir(os.path.dirname(error_file)),
        },
        sort_keys=True,
    )
)
