"""The Parquet record under an output root: writing and reading batches (storage), their seals and digests,
the manifests, the index of output roots, finding a sweep by what the user typed, and provenance."""
