"""Running a sweep's tasks: the Ray executor (local or a cluster) and the dry run's time estimate."""
