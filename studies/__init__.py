"""Measurement studies (speed, the offline optimum's formulation, the ratio against load): the layer above
the pipeline that measures the product; nothing in pdors, offline_opt or pipeline imports it."""
