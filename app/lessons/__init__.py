"""Lessons: each topic opens with short sections whose examples the learner predicts, then runs."""
