"""Spaced repetition: flashcards and missed items, scheduled by FSRS (the `fsrs` package)."""
