"""Query suggestion (Adolphs et al. 2022, Section 4): the reformulation dataset built by latent
traversal, the suggestion models trained on it (plain and with pseudo-relevance feedback), the
paper's baselines (RM3, Sampling+QD) and their evaluation."""
