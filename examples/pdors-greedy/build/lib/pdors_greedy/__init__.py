"""An example policy package for pdors: ``Greedy`` (policy.py) and four deliberately broken policies (broken.py)."""
