"""How things are shown, below every stage: display names of policies and metrics, lines that fit a terminal,
credentials masked in text. Leaf modules; no other room is imported."""
