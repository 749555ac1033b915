"""``pdors nightly``: the competitive-ratio validation (:mod:`pipeline.nightly.run`), its pinned regression record
and its paper-scale part."""
