"""Statistics: the accuracy decision rule and the performance comparison.

Pure functions: numbers in, typed results out, no I/O. Textbook parts come from libraries
(scipy: exact binomial / McNemar, t and Welch intervals; statsmodels: Wilson and Newcombe
intervals); what no mainstream library has is kept here: Tango's score test and interval for
paired proportions (`proportions`) and the Lan–DeMets alpha-spending boundaries (`sequential`).

"Gate" means the engineer's sign-off only; this package decides whether the evidence shows
non-inferiority, which the gate then reviews.
"""
