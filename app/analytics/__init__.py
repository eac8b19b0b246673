"""Admin dashboards: item analysis, activity and learners' progress, with CSV exports."""
