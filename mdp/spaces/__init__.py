"""Metric spaces: finite spaces with a distance matrix, vector spaces without one, their labels, the files and specs they come from."""
