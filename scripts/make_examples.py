"""Write the small synthetic example files of ``docs/examples/`` (used by the README's recipes).

The data are made up (fixed seed), so they can ship with the repository:

* ``checkins.txt``: about 600 check-ins of 80 users at 45 venues in central Vienna, in the SNAP
  ``loc-*_totalCheckins`` layout (user, ISO time, lat, lon, venue id; tab-separated);
* ``places.csv``: 20 places as ``lat,lon`` (degrees);
* ``sites.csv``: 20 labelled sites with planar coordinates in km (``site,x_km,y_km``).

Run ``python scripts/make_examples.py`` from the repository root to rewrite them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parents[1] / "docs" / "examples"
CENTRE = (48.2082, 16.3738)   # Vienna, Stephansplatz


def main(seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    OUT.mkdir(parents=True, exist_ok=True)
    # Venues: three neighbourhoods of different size around the centre.
    hubs = np.array([[0.0, 0.0], [0.012, -0.025], [-0.015, 0.02]]) + CENTRE
    venue_hub = rng.choice(3, size=45, p=[0.5, 0.3, 0.2])
    venues = hubs[venue_hub] + rng.normal(scale=[0.006, 0.009], size=(45, 2))
    popularity = rng.pareto(1.5, size=45) + 0.2
    rows = []
    start = datetime(2024, 3, 1)
    for user in range(80):
        favourite = rng.choice(3, p=[0.5, 0.3, 0.2])
        weights = popularity * np.where(venue_hub == favourite, 4.0, 1.0)
        for _ in range(int(rng.integers(3, 13))):
            v = int(rng.choice(45, p=weights / weights.sum()))
            when = start + timedelta(minutes=int(rng.integers(0, 60 * 24 * 30)))
            lat, lon = venues[v] + rng.normal(scale=2e-5, size=2)
            rows.append((user, when.strftime("%Y-%m-%dT%H:%M:%SZ"), f"{lat:.6f}", f"{lon:.6f}",
                         f"v{v:02d}"))
    rows = rows[:600]
    (OUT / "checkins.txt").write_text("".join("\t".join(map(str, r)) + "\n" for r in rows))

    places = venues[np.argsort(-popularity)[:20]]
    pd.DataFrame({"lat": places[:, 0].round(5), "lon": places[:, 1].round(5)}).to_csv(
        OUT / "places.csv", index=False)

    sites = rng.uniform(0.0, 10.0, size=(20, 2)).round(3)
    pd.DataFrame({"site": [f"s{i:02d}" for i in range(20)], "x_km": sites[:, 0],
                  "y_km": sites[:, 1]}).to_csv(OUT / "sites.csv", index=False)
    print(f"wrote {OUT}/checkins.txt ({len(rows)} check-ins), places.csv, sites.csv")


if __name__ == "__main__":
    main()
