"""The worst-case-loss LP of OPTMech and SpannerMech (Imola et al. 2022, section 2.1): its lazy rounds and the interior point method over its column blocks."""
