"""Labs: guided practicals whose steps the learner edits and runs across real ranks."""
