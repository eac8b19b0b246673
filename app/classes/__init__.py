"""Classes (sections): rosters, assignments with dates, per-learner extensions, gradebook CSV."""
