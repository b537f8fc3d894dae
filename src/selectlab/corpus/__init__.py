"""Embedded corpus: readers of offline text, corruption operators, and the corpus builder."""
