"""Building blocks of primal-dual online schedulers (PD-ORS and OASiS): exponential prices (eqs. 12-14),
the rounding gain (eqs. 29-30), the per-slot cost theta of Algorithm 4 and the dynamic program of
Algorithms 2-3."""
