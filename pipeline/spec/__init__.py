"""What a sweep asks for: the config schema, the grid of tasks it expands to, the memory sizing checked before
anything starts, the OPT task and the columns a run yields. Imports no other stage."""
