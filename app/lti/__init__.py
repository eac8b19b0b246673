"""LTI 1.3: launches from an LMS, its roster (NRPS) and score passback (AGS)."""
