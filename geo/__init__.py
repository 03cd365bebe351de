"""Geo: location data, popular-cell metric spaces, heatmaps, federated heatmaps, heat sources."""
