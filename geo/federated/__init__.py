"""Federated heatmaps under distributed DP with secure aggregation (Bagdasaryan et al., PoPETs
2022): Polya noise shares, sharded SecAgg with modular clipping and dropouts, the adaptive
hierarchical histogram and the Table 1 baselines."""

from .accounting import Accounting
from .adaptive import (
    FederatedEstimate,
    adaptive_hierarchical_histogram,
    schedule_epsilon,
    target_sigma,
    update_tree,
)
from .baselines import (
    adaptive_grid,
    count_min_sketch,
    flat_onehot,
    geometric_budget,
    hierarchical_onehot,
    level_errors,
    nonprivate,
    nonprivate_best_level,
    oracle_partition,
    spatial_decomposition,
)
from .data import NYC_BOX, population_map, sample_users, to_pixels
from .metrics import block_sum, density_map, emd_maps, l1, mse, to_density
from .multilocation import encode_weighted, multi_location_sensitivity
from .noise import (
    client_noise_share,
    discrete_laplace_beta,
    discrete_laplace_variance,
    dp_alpha,
    epsilon_for_std,
    noise_std,
    polya,
    shard_noise,
    shard_noise_variance,
    surviving_clients,
)
from .quadtree import PrefixTree, cell_codes, node_bitstring
from .secagg import (
    HistogramResult,
    decode_centered,
    histogram_query,
    modular_clip,
    plan_shards,
    secure_sum,
)

__all__ = [
    "Accounting", "FederatedEstimate", "adaptive_hierarchical_histogram", "schedule_epsilon",
    "target_sigma", "update_tree", "adaptive_grid", "count_min_sketch", "flat_onehot",
    "geometric_budget", "hierarchical_onehot", "level_errors", "nonprivate",
    "nonprivate_best_level", "oracle_partition",
    "spatial_decomposition", "NYC_BOX", "population_map", "sample_users", "to_pixels", "block_sum", "density_map",
    "emd_maps", "l1", "mse", "to_density", "encode_weighted", "multi_location_sensitivity",
    "client_noise_share", "discrete_laplace_beta", "discrete_laplace_variance", "dp_alpha",
    "epsilon_for_std", "noise_std", "polya", "shard_noise", "shard_noise_variance",
    "surviving_clients", "PrefixTree", "cell_codes", "node_bitstring", "HistogramResult",
    "decode_centered", "histogram_query", "modular_clip", "plan_shards", "secure_sum",
]
