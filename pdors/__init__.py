"""PD-ORS: online scheduling of parameter-server training jobs (Yu et al., IEEE TNSE 2022), its rivals,
and the machinery to compare them."""

__version__ = "0.1.0"
