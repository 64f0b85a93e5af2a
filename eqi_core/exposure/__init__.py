"""Exposing query identification (Li, Biega, Mitra et al., WWW 2022): exact exposure maps, reverse
retrieval, metric learning (Residual / Append), RELQ, evaluation and audit analyses."""
